package reconcile

import "slices"

// sortKeys sorts packed key-and-window words: an LSD radix sort, 16 bits a pass, for the tens of
// millions a large side holds (several times faster than a comparison sort there); it takes a
// second array of the same size while it runs.
func sortKeys(a []uint64) {
	if len(a) < 1<<16 {
		slices.Sort(a)
		return
	}
	buf := make([]uint64, len(a))
	src, dst := a, buf
	var count [1 << 16]int
	for shift := uint(0); shift < 64; shift += 16 {
		clear(count[:])
		for _, v := range src {
			count[(v>>shift)&0xffff]++
		}
		if count[(src[0]>>shift)&0xffff] == len(src) {
			continue // every word has the same digit here: the pass would move nothing
		}
		pos := 0
		for i, c := range count {
			count[i] = pos
			pos += c
		}
		for _, v := range src {
			d := (v >> shift) & 0xffff
			dst[count[d]] = v
			count[d]++
		}
		src, dst = dst, src
	}
	if &src[0] != &a[0] {
		copy(a, src)
	}
}
