// Command gpulab-kube is the real-node harness's one Kubernetes binary (toolchain/node;
// workplace only): kube-apiserver, kube-controller-manager, kube-scheduler and the
// kubelet, compiled and linked once, so the node fits what travels to the GPU machine.
// It dispatches on the name it was started under (a link named after the component),
// or on its first argument when started as gpulab-kube. Each branch is what the
// upstream k8s.io/kubernetes/cmd/<component>/<component>.go main of the pinned version
// runs (cli.Run of the component's cobra command).
package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	_ "time/tzdata" // CronJob time zones, as in upstream kube-apiserver and kcm

	"github.com/spf13/cobra"
	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"          // JSON log format
	_ "k8s.io/component-base/metrics/prometheus/clientgo" // client-go metrics
	_ "k8s.io/component-base/metrics/prometheus/version"  // version metric
	apiserver "k8s.io/kubernetes/cmd/kube-apiserver/app"
	controllermanager "k8s.io/kubernetes/cmd/kube-controller-manager/app"
	scheduler "k8s.io/kubernetes/cmd/kube-scheduler/app"
	kubelet "k8s.io/kubernetes/cmd/kubelet/app"
)

var components = map[string]func() *cobra.Command{
	"kube-apiserver":          apiserver.NewAPIServerCommand,
	"kube-controller-manager": controllermanager.NewControllerManagerCommand,
	"kube-scheduler":          func() *cobra.Command { return scheduler.NewSchedulerCommand() },
	"kubelet":                 func() *cobra.Command { return kubelet.NewKubeletCommand(context.Background()) },
}

func names() string {
	all := make([]string, 0, len(components))
	for n := range components {
		all = append(all, n)
	}
	sort.Strings(all)
	return strings.Join(all, ", ")
}

func main() {
	name := filepath.Base(os.Args[0])
	if name == "gpulab-kube" {
		if len(os.Args) < 2 {
			fmt.Fprintf(os.Stderr, "usage: gpulab-kube <component> [flags]; components: %s\n", names())
			os.Exit(2)
		}
		os.Args = os.Args[1:]
		name = filepath.Base(os.Args[0])
	}
	newCommand, ok := components[name]
	if !ok {
		fmt.Fprintf(os.Stderr, "gpulab-kube: unknown component %q; components: %s\n", name, names())
		os.Exit(2)
	}
	os.Exit(cli.Run(newCommand()))
}
