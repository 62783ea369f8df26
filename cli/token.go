package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/tidemark/tidemark/auth"
)

func token(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return errors.New("token: say create, list or revoke")
	}
	fs := flag.NewFlagSet("token "+args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	var db dbConfig
	db.register(fs)
	name := fs.String("name", "", "token name, e.g. the client that will use it")
	scopes := fs.String("scopes", "", "comma-separated scopes: read, write, admin")
	if err := parse(fs, args[1:]); err != nil {
		return err
	}
	open := func() (*auth.Store, func(), error) {
		store, err := db.open(ctx)
		if err != nil {
			return nil, nil, err
		}
		if _, err := store.Migrate(ctx); err != nil {
			store.Close()
			return nil, nil, err
		}
		return auth.NewStore(store.Client, nil), func() { store.Close() }, nil
	}
	switch args[0] {
	case "create":
		sc, err := auth.ParseScopes(*scopes)
		if err != nil {
			return err
		}
		tokens, done, err := open()
		if err != nil {
			return err
		}
		defer done()
		secret, tok, err := tokens.Create(ctx, *name, sc)
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout, secret)
		fmt.Fprintf(stderr, "created token %q with scopes %v; the secret above is shown only once\n", tok.Name, tok.Scopes)
		return nil
	case "list":
		tokens, done, err := open()
		if err != nil {
			return err
		}
		defer done()
		list, err := tokens.List(ctx)
		if err != nil {
			return err
		}
		w := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(w, "NAME\tSCOPES\tCREATED\tREVOKED")
		for _, t := range list {
			revoked := "-"
			if t.RevokedAt != nil {
				revoked = t.RevokedAt.Format(time.RFC3339)
			}
			sc := make([]string, len(t.Scopes))
			for i, s := range t.Scopes {
				sc[i] = string(s)
			}
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", t.Name, strings.Join(sc, ","), t.CreatedAt.Format(time.RFC3339), revoked)
		}
		return w.Flush()
	case "revoke":
		tokens, done, err := open()
		if err != nil {
			return err
		}
		defer done()
		if err := tokens.Revoke(ctx, *name); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "revoked token %q\n", *name)
		return nil
	}
	return fmt.Errorf("token: unknown subcommand %q; say create, list or revoke", args[0])
}
