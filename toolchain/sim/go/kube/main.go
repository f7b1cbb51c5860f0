// Command hyperkube is one multi-call binary holding kube-apiserver,
// kube-controller-manager, kube-scheduler and kubectl, so the Kubernetes code is
// compiled and linked once instead of four times. It dispatches on the name it
// was started under (a symlink named after the component), or on its first
// argument when started as "hyperkube". Each branch mirrors the upstream
// k8s.io/kubernetes/cmd/<component>/main.go of the pinned version.
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	_ "time/tzdata" // CronJob time zones, as in upstream kube-apiserver and kcm

	"github.com/spf13/cobra"
	_ "k8s.io/client-go/plugin/pkg/client/auth" // kubectl's client auth plugins
	"k8s.io/component-base/cli"
	"k8s.io/component-base/logs"
	_ "k8s.io/component-base/logs/json/register"          // JSON log format
	_ "k8s.io/component-base/metrics/prometheus/clientgo" // client-go metrics
	_ "k8s.io/component-base/metrics/prometheus/version"  // version metric
	kubectlcmd "k8s.io/kubectl/pkg/cmd"
	kubectlutil "k8s.io/kubectl/pkg/cmd/util"
	apiserver "k8s.io/kubernetes/cmd/kube-apiserver/app"
	controllermanager "k8s.io/kubernetes/cmd/kube-controller-manager/app"
	scheduler "k8s.io/kubernetes/cmd/kube-scheduler/app"
)

// servers are started through cli.Run, exactly as their upstream main packages do.
var servers = map[string]func() *cobra.Command{
	"kube-apiserver":          apiserver.NewAPIServerCommand,
	"kube-controller-manager": controllermanager.NewControllerManagerCommand,
	"kube-scheduler":          func() *cobra.Command { return scheduler.NewSchedulerCommand() },
}

func runKubectl() int {
	// Upstream sets klog's verbosity before the command is built, because
	// building it already logs (plugins, .kuberc).
	logs.GlogSetter(kubectlcmd.GetLogVerbosity(os.Args)) // nolint:errcheck
	command := kubectlcmd.NewDefaultKubectlCommand()
	if err := cli.RunNoErrOutput(command); err != nil {
		kubectlutil.CheckErr(err)
	}
	return 0
}

func names() string {
	all := []string{"kubectl"}
	for n := range servers {
		all = append(all, n)
	}
	sort.Strings(all)
	return strings.Join(all, ", ")
}

func main() {
	name := filepath.Base(os.Args[0])
	if name == "hyperkube" {
		if len(os.Args) < 2 {
			fmt.Fprintf(os.Stderr, "usage: hyperkube <component> [flags]; components: %s\n", names())
			os.Exit(2)
		}
		// Shift so the component sees its own name as argv[0].
		os.Args = os.Args[1:]
		name = filepath.Base(os.Args[0])
	}
	if name == "kubectl" {
		os.Exit(runKubectl())
	}
	newCommand, ok := servers[name]
	if !ok {
		fmt.Fprintf(os.Stderr, "hyperkube: unknown component %q; components: %s\n", name, names())
		os.Exit(2)
	}
	os.Exit(cli.Run(newCommand()))
}
