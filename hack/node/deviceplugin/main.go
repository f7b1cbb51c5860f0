// Command gpulab-device-plugin is gpu-lab's own device plugin for the real-node harness
// (toolchain/node; workplace only, never part of the lab the program builds). NVIDIA's
// device plugin image cannot be had on the lent GPU machine, so this plugin does the part
// of its job the lab checks:
//
//   - NVML (libnvidia-ml.so.1) lists the GPUs; each is a device whose ID is its UUID;
//   - health: a GPU whose NVML handle stops answering, or that raised a critical XID, is
//     reported Unhealthy through ListAndWatch (the kubelet then lowers allocatable);
//     a fault-injection file (--fault-file) makes GPUs Unhealthy on purpose, for the
//     lab's negative test;
//   - Allocate answers CDI device names from the spec `nvidia-ctk cdi generate` wrote, so
//     containerd injects the device nodes, the driver libraries and nvidia-smi;
//   - it registers with the kubelet and registers again when the kubelet restarts
//     (kubelet.sock re-created), as the kubelet's device-manager docs ask.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
)

type options struct {
	resource       string
	dir            string
	endpoint       string
	cdiSpec        string
	faultFile      string
	nvmlLibrary    string
	healthInterval time.Duration
}

func main() {
	var o options
	flag.StringVar(&o.resource, "resource", "nvidia.com/gpu", "the extended resource to advertise")
	flag.StringVar(&o.dir, "device-plugin-dir", pluginapi.DevicePluginPath, "the kubelet's device-plugin directory")
	flag.StringVar(&o.endpoint, "endpoint", "gpulab-nvidia-gpu.sock", "this plugin's socket name in --device-plugin-dir")
	flag.StringVar(&o.cdiSpec, "cdi-spec", "/var/run/cdi/nvidia.json", "the CDI spec nvidia-ctk cdi generate wrote (JSON)")
	flag.StringVar(&o.faultFile, "fault-file", "", "GPU UUIDs (or 'all') to report Unhealthy, one a line (the harness's negative test)")
	flag.StringVar(&o.nvmlLibrary, "nvml-library", "", "libnvidia-ml.so.1 to load (default: the library search path's)")
	flag.DurationVar(&o.healthInterval, "health-interval", 2*time.Second, "how often health is checked")
	probe := flag.Bool("probe", false, "exit 0 when this plugin's socket answers (a readiness probe), else 1")
	fake := flag.Int("fake-gpus", 0, "no NVML: advertise this many placeholder GPUs (a rehearsal without a GPU, never a real node)")
	flag.Parse()
	log.SetFlags(log.LstdFlags | log.Lmicroseconds | log.LUTC)
	if *probe {
		if err := probeSocket(filepath.Join(o.dir, o.endpoint)); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return
	}

	var src Source
	var err error
	if *fake > 0 {
		log.Printf("-fake-gpus %d: no NVML, placeholder GPUs (a rehearsal, not a GPU node)", *fake)
		src = NewFakeSource(*fake)
	} else if src, err = NewNVMLSource(o.nvmlLibrary); err != nil {
		log.Fatalf("%v", err)
	}
	defer src.Close()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o, src); err != nil {
		log.Fatalf("%v", err)
	}
}

// run lists the GPUs, maps them to CDI names, serves and registers, then checks health
// every o.healthInterval and re-registers whenever the kubelet's socket is re-created,
// until ctx ends.
func run(ctx context.Context, o options, src Source) error {
	gpus, err := src.List()
	if err != nil {
		return err
	}
	if len(gpus) == 0 {
		log.Printf("NVML lists no GPU: advertising %s with no device", o.resource)
	}
	for _, g := range gpus {
		log.Printf("GPU %d: %s %s (minor %d)", g.Index, g.Name, g.UUID, g.Minor)
	}
	spec, err := LoadCDISpec(o.cdiSpec)
	if err != nil {
		return err
	}
	names, err := spec.Names(gpus)
	if err != nil {
		return err
	}
	log.Printf("CDI spec %s (cdiVersion %s, kind %s): %v", o.cdiSpec, spec.Version, spec.Kind, names)

	p := NewPlugin(o.resource, o.dir, o.endpoint, gpus, names)
	kubelet := filepath.Join(o.dir, filepath.Base(pluginapi.KubeletSocket))
	check := func() {
		faults, err := Faults(o.faultFile)
		if err != nil {
			log.Printf("%v", err)
		}
		h := Merge(gpus, src.Check(), faults, o.faultFile)
		if p.SetHealth(h) {
			log.Printf("health: %s", Describe(h))
		}
	}
	check()
	var seen string
	start := func() error {
		p.Stop()
		if err := p.Serve(); err != nil {
			return err
		}
		for attempt := 1; ; attempt++ {
			err := p.Register(ctx, kubelet)
			if err == nil {
				break
			}
			if attempt == 30 || ctx.Err() != nil {
				return err
			}
			log.Printf("%v; retrying", err)
			time.Sleep(time.Second)
		}
		seen = socketID(kubelet)
		log.Printf("registered %s with the kubelet (socket %s)", o.resource, filepath.Join(o.dir, o.endpoint))
		return nil
	}
	if err := start(); err != nil {
		return err
	}
	defer p.Stop()
	tick := time.NewTicker(o.healthInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			log.Printf("stopping")
			return nil
		case <-tick.C:
		}
		check()
		if now := socketID(kubelet); now != "" && now != seen {
			log.Printf("kubelet socket %s re-created: the kubelet restarted; registering again", kubelet)
			if err := start(); err != nil {
				return err
			}
		}
	}
}

// socketID identifies one incarnation of a socket file: device, inode and change time (a
// re-created socket can get the same inode number back); "" when it does not exist.
func socketID(path string) string {
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		return ""
	}
	return strconv.FormatUint(st.Dev, 10) + ":" + strconv.FormatUint(st.Ino, 10) + ":" +
		strconv.FormatInt(st.Ctim.Sec, 10) + "." + strconv.FormatInt(st.Ctim.Nsec, 10)
}

// probeSocket: the plugin's own DevicePlugin service answers GetDevicePluginOptions.
func probeSocket(sock string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	conn, err := dialUnix(ctx, sock)
	if err != nil {
		return err
	}
	defer conn.Close()
	if _, err := pluginapi.NewDevicePluginClient(conn).GetDevicePluginOptions(ctx, &pluginapi.Empty{}); err != nil {
		return fmt.Errorf("device plugin at %s does not answer: %w", sock, err)
	}
	return nil
}
