// Command gpulab-containerd is the real-node harness's containerd and ctr in one binary
// (toolchain/node; workplace only): the daemon with upstream's builtin plugins (CRI,
// overlayfs, the runc v2 runtime, CDI always on) and the client the harness imports its
// images with (ctr images import). It dispatches on the name it was started under, or on
// its first argument when started as gpulab-containerd; each branch is what upstream's
// cmd/containerd/main.go and cmd/ctr/main.go of the pinned version run. The shim
// (containerd-shim-runc-v2) stays its own binary: it registers plugins of its own.
package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	_ "github.com/containerd/containerd/v2/cmd/containerd/builtins"
	"github.com/containerd/containerd/v2/cmd/containerd/command"
	"github.com/containerd/containerd/v2/cmd/ctr/app"
)

func main() {
	name := filepath.Base(os.Args[0])
	if name == "gpulab-containerd" && len(os.Args) > 1 {
		os.Args = os.Args[1:]
		name = filepath.Base(os.Args[0])
	}
	ctx := context.Background()
	switch name {
	case "containerd":
		if err := command.App().Run(ctx, os.Args); err != nil {
			fmt.Fprintln(os.Stderr, "containerd:", err)
			os.Exit(1)
		}
	case "ctr":
		if err := app.New().Run(ctx, os.Args); err != nil {
			fmt.Fprintln(os.Stderr, "ctr:", err)
			os.Exit(1)
		}
	default:
		fmt.Fprintf(os.Stderr, "gpulab-containerd: unknown component %q; components: containerd, ctr\n", name)
		os.Exit(2)
	}
}
