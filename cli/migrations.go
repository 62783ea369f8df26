package cli

import (
	"database/sql"
	"fmt"
	"strings"

	_ "github.com/lib/pq" // migration sources on PostgreSQL
)

// migrationSources opens (lazily: nothing connects yet) the PostgreSQL databases named in
// "name=DSN,name=DSN": the old or new side of a dataset migration may be read from them. Give
// each a role that can only read.
func migrationSources(spec string) (map[string]*sql.DB, error) {
	out := map[string]*sql.DB{}
	if strings.TrimSpace(spec) == "" {
		return out, nil
	}
	for _, part := range strings.Split(spec, ",") {
		name, dsn, ok := strings.Cut(strings.TrimSpace(part), "=")
		name, dsn = strings.TrimSpace(name), strings.TrimSpace(dsn)
		if !ok || name == "" || dsn == "" {
			closeAll(out)
			return nil, fmt.Errorf("--migration-sources: %q must look like name=postgres://user@host:5432/db", redactDSN(part))
		}
		if _, dup := out[name]; dup {
			closeAll(out)
			return nil, fmt.Errorf("--migration-sources: the name %q is given twice", name)
		}
		db, err := sql.Open("postgres", dsn)
		if err != nil {
			closeAll(out)
			return nil, fmt.Errorf("--migration-sources: %s: %w", name, err)
		}
		out[name] = db
	}
	return out, nil
}

func closeAll(dbs map[string]*sql.DB) {
	for _, db := range dbs {
		db.Close()
	}
}

// redactDSN hides a password in an error message.
func redactDSN(s string) string {
	if i := strings.Index(s, "://"); i >= 0 {
		if at := strings.LastIndex(s, "@"); at > i {
			if colon := strings.Index(s[i+3:at], ":"); colon >= 0 {
				return s[:i+3+colon+1] + "***" + s[at:]
			}
		}
	}
	return s
}
