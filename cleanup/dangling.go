package cleanup

// The by-key check of the current snapshot's files for dangling references.

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tidemark/tidemark/tables"
)

// dangling checks by key (never by walking, never from the cache) the current metadata file,
// manifest list and manifests, then every live file of the current snapshot, and checks the
// missing ones again after a delay before reporting them. A missing manifest is a dangling
// reference like a missing data file.
func (s *Service) dangling(ctx context.Context, live *tables.Live, rep *Report, delay time.Duration) error {
	var heads, unchecked atomic.Int64
	head := func(p string) (missing bool, err error) {
		if s.heads != nil {
			if err := s.heads.Wait(ctx); err != nil {
				return false, err
			}
		}
		heads.Add(1)
		_, err = stat(live.IO, p)
		return errors.Is(err, fs.ErrNotExist), err
	}
	check := func(files []tables.CurrentFile) ([]tables.CurrentFile, error) {
		var mu sync.Mutex
		var missing []tables.CurrentFile
		sem := make(chan struct{}, s.statPar)
		var wg sync.WaitGroup
		for _, f := range files {
			if ctx.Err() != nil {
				break
			}
			sem <- struct{}{}
			wg.Add(1)
			go func() {
				defer func() { <-sem; wg.Done() }()
				gone, err := head(f.Path)
				switch {
				case gone:
					mu.Lock()
					missing = append(missing, f)
					mu.Unlock()
				case err != nil && ctx.Err() == nil:
					unchecked.Add(1)
					s.log.Warn("could not check a referenced file", "path", f.Path, "err", err)
				}
			}()
		}
		wg.Wait()
		return missing, ctx.Err()
	}
	structure, serr := s.tables.CurrentStructure(ctx, live)
	missing, err := check(structure)
	if err != nil {
		return err
	}
	rep.FilesChecked += int64(len(structure))
	if serr != nil && len(missing) == 0 {
		return fmt.Errorf("read the current manifest list: %w", serr)
	}
	// Stream the current files in batches, so a table of millions of files is never held whole.
	var batch []tables.CurrentFile
	flush := func() error {
		m, err := check(batch)
		missing = append(missing, m...)
		rep.FilesChecked += int64(len(batch))
		batch = batch[:0]
		return err
	}
	err = s.tables.WalkCurrentFiles(ctx, live, func(f tables.CurrentFile) error {
		batch = append(batch, f)
		if len(batch) == 10000 {
			return flush()
		}
		return nil
	})
	if err == nil {
		err = flush()
	}
	if err != nil && len(missing) > 0 && ctx.Err() == nil {
		// A missing manifest (or list) cannot be read for its entries: its files stay unchecked.
		s.log.Warn("could not read every current manifest; some are missing", "err", err)
		unchecked.Add(1)
		err = nil
	}
	if err != nil {
		return fmt.Errorf("check referenced files: %w", err)
	}
	if len(missing) > 0 {
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		if missing, err = check(missing); err != nil {
			return err
		}
	}
	slices.SortFunc(missing, func(a, b tables.CurrentFile) int { return strings.Compare(a.Path, b.Path) })
	rep.DanglingCount = int64(len(missing))
	for _, m := range missing {
		if len(rep.Dangling) == 1000 {
			break
		}
		rep.Dangling = append(rep.Dangling, DanglingRef{SnapshotID: m.SnapshotID, Manifest: m.Manifest, Path: m.Path, Content: m.Content})
	}
	rep.Requests.Head += heads.Load()
	rep.Unchecked += unchecked.Load()
	return nil
}
