package warehouse

import "strings"

// dataPathProps are the table properties that say where a writer puts the table's files.
var dataPathProps = []string{"write.data.path", "write.metadata.path", "write.object-storage.path", "write.folder-storage.path"}

// checkOwnFiles refuses a commit whose write paths or new statistics files are off the table's
// ground (its manifest lists, manifests and data files are checked as they are read).
func checkOwnFiles(p *plan) error {
	props := p.updated.Properties()
	for _, k := range dataPathProps {
		v, ok := props[k]
		if !ok {
			continue
		}
		if err := p.ground.Check(strings.TrimRight(v, "/"), false); err != nil {
			return invalid("properties", "table %s: %s = %v; point it under the table's location %s, or remove it", p.ident, k, err, p.updated.Location())
		}
	}
	known := map[string]bool{}
	if p.base != nil {
		for st := range p.base.Statistics() {
			known[st.StatisticsPath] = true
		}
		for st := range p.base.PartitionStatistics() {
			known[st.StatisticsPath] = true
		}
	}
	var paths []string
	for st := range p.updated.Statistics() {
		paths = append(paths, st.StatisticsPath)
	}
	for st := range p.updated.PartitionStatistics() {
		paths = append(paths, st.StatisticsPath)
	}
	for _, sp := range paths {
		if known[sp] {
			continue
		}
		if err := p.ground.Check(sp, false); err != nil {
			return invalid("updates", "table %s: statistics file %v; write statistics under the table's location %s", p.ident, err, p.updated.Location())
		}
	}
	return nil
}
