// Command tidemark is the Tidemark data catalog: `tidemark serve` runs the API and web UI,
// `tidemark migrate` brings the database schema up to date, `tidemark token` manages API
// tokens, `tidemark tables` and `tidemark cleanup` work on Iceberg tables. See package cli.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/tidemark/tidemark/cli"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cli.Version = version
	if err := cli.Run(ctx, os.Args[1:], os.Stdout, os.Stderr, nil); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "tidemark:", err)
		}
		os.Exit(2)
	}
}
