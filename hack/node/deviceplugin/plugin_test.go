package main

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
)

var testGPUs = []GPU{
	{UUID: "GPU-00000000-0000-4000-8000-000000000001", Index: 1, Name: "NVIDIA H200", Minor: 1},
	{UUID: "GPU-00000000-0000-4000-8000-000000000000", Index: 0, Name: "NVIDIA H200", Minor: 0},
}

// The shape nvidia-ctk cdi generate --format=json writes (index and uuid device names, "all").
const testSpec = `{"cdiVersion":"0.5.0","kind":"nvidia.com/gpu","devices":[
 {"name":"0","containerEdits":{}},{"name":"GPU-00000000-0000-4000-8000-000000000000","containerEdits":{}},
 {"name":"1","containerEdits":{}},{"name":"all","containerEdits":{}}],"containerEdits":{}}`

func writeFile(t *testing.T, dir, name, text string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestFaults(t *testing.T) {
	dir := t.TempDir()
	if f, err := Faults(filepath.Join(dir, "absent")); err != nil || f != nil {
		t.Fatalf("a missing fault file is no fault, got %v %v", f, err)
	}
	p := writeFile(t, dir, "faults", "# injected\nGPU-a  # the first\n\n  all\n")
	f, err := Faults(p)
	if err != nil || len(f) != 2 || !f["GPU-a"] || !f["all"] {
		t.Fatalf("got %v %v", f, err)
	}
}

func TestMerge(t *testing.T) {
	h := Merge(testGPUs, map[string]string{testGPUs[0].UUID: "NVML: GPU is lost"}, nil, "")
	if h[testGPUs[0].UUID].Healthy || h[testGPUs[0].UUID].Reason != "NVML: GPU is lost" || !h[testGPUs[1].UUID].Healthy {
		t.Fatalf("source verdict: %v", h)
	}
	h = Merge(testGPUs, nil, map[string]bool{"all": true}, "/run/f")
	for _, g := range testGPUs {
		if h[g.UUID].Healthy || !strings.Contains(h[g.UUID].Reason, "/run/f") {
			t.Fatalf("fault all: %v", h)
		}
	}
	if !strings.Contains(Describe(h), "Unhealthy (fault injected through /run/f)") {
		t.Fatal(Describe(h))
	}
}

func TestCDINames(t *testing.T) {
	dir := t.TempDir()
	spec, err := LoadCDISpec(writeFile(t, dir, "nvidia.json", testSpec))
	if err != nil {
		t.Fatal(err)
	}
	names, err := spec.Names(testGPUs)
	if err != nil {
		t.Fatal(err)
	}
	// GPU 0 is named by UUID in the spec, GPU 1 only by index.
	if names[testGPUs[1].UUID] != "nvidia.com/gpu=GPU-00000000-0000-4000-8000-000000000000" ||
		names[testGPUs[0].UUID] != "nvidia.com/gpu=1" {
		t.Fatalf("names: %v", names)
	}
	_, err = spec.Names(append(testGPUs, GPU{UUID: "GPU-x", Index: 7}))
	if err == nil || !strings.Contains(err.Error(), "GPU-x (index 7)") {
		t.Fatalf("a GPU the spec lacks: %v", err)
	}
	if _, err := LoadCDISpec(writeFile(t, dir, "bad.json", `{"kind":"x"}`)); err == nil {
		t.Fatal("a spec without cdiVersion/devices must be refused")
	}
	if _, err := LoadCDISpec(filepath.Join(dir, "none.json")); err == nil || !strings.Contains(err.Error(), "nvidia-ctk cdi generate") {
		t.Fatalf("missing spec: %v", err)
	}
}

// fakeKubelet is the kubelet's Registration service on a unix socket.
type fakeKubelet struct {
	pluginapi.UnimplementedRegistrationServer
	mu   sync.Mutex
	reqs []*pluginapi.RegisterRequest
	srv  *grpc.Server
}

func (k *fakeKubelet) Register(_ context.Context, r *pluginapi.RegisterRequest) (*pluginapi.Empty, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.reqs = append(k.reqs, r)
	return &pluginapi.Empty{}, nil
}

func (k *fakeKubelet) count() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return len(k.reqs)
}

func startKubelet(t *testing.T, sock string) *fakeKubelet {
	t.Helper()
	_ = os.Remove(sock)
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	k := &fakeKubelet{srv: grpc.NewServer()}
	pluginapi.RegisterRegistrationServer(k.srv, k)
	go func() { _ = k.srv.Serve(l) }()
	t.Cleanup(k.srv.Stop)
	return k
}

func pluginClient(t *testing.T, sock string) pluginapi.DevicePluginClient {
	t.Helper()
	conn, err := dialUnix(context.Background(), sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return pluginapi.NewDevicePluginClient(conn)
}

func shortDir(t *testing.T) string {
	// unix socket paths are limited to 108 bytes; t.TempDir() can be longer.
	d, err := os.MkdirTemp("", "dp")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

func TestServeListAndWatchAllocate(t *testing.T) {
	dir := shortDir(t)
	names := map[string]string{testGPUs[0].UUID: "nvidia.com/gpu=1", testGPUs[1].UUID: "nvidia.com/gpu=0"}
	p := NewPlugin("nvidia.com/gpu", dir, "p.sock", testGPUs, names)
	if err := p.Serve(); err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	c := pluginClient(t, filepath.Join(dir, "p.sock"))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	stream, err := c.ListAndWatch(ctx, &pluginapi.Empty{})
	if err != nil {
		t.Fatal(err)
	}
	first, err := stream.Recv()
	if err != nil {
		t.Fatal(err)
	}
	if len(first.Devices) != 2 || first.Devices[0].ID != testGPUs[1].UUID || first.Devices[0].Health != pluginapi.Healthy {
		t.Fatalf("first list (index order, healthy): %v", first.Devices)
	}
	// A health change reaches the stream; the same health again sends nothing.
	h := Merge(testGPUs, nil, map[string]bool{testGPUs[1].UUID: true}, "f")
	if !p.SetHealth(h) || p.SetHealth(h) {
		t.Fatal("SetHealth reports a change once")
	}
	upd, err := stream.Recv()
	if err != nil {
		t.Fatal(err)
	}
	if upd.Devices[0].Health != pluginapi.Unhealthy || upd.Devices[1].Health != pluginapi.Healthy {
		t.Fatalf("update: %v", upd.Devices)
	}

	resp, err := c.Allocate(ctx, &pluginapi.AllocateRequest{ContainerRequests: []*pluginapi.ContainerAllocateRequest{
		{DevicesIds: []string{testGPUs[1].UUID}},
		{DevicesIds: []string{testGPUs[0].UUID, testGPUs[1].UUID}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	got := [][]string{cdiNames(resp.ContainerResponses[0].CdiDevices), cdiNames(resp.ContainerResponses[1].CdiDevices)}
	if strings.Join(got[0], ",") != "nvidia.com/gpu=0" || strings.Join(got[1], ",") != "nvidia.com/gpu=1,nvidia.com/gpu=0" {
		t.Fatalf("CDI names per container: %v", got)
	}
	if len(resp.ContainerResponses[0].Envs) != 0 || len(resp.ContainerResponses[0].Devices) != 0 {
		t.Fatal("CDI only: no env, no device specs")
	}
	_, err = c.Allocate(ctx, &pluginapi.AllocateRequest{ContainerRequests: []*pluginapi.ContainerAllocateRequest{{DevicesIds: []string{"GPU-nope"}}}})
	if status.Code(err) != codes.InvalidArgument {
		t.Fatalf("unknown device: %v", err)
	}
	if err := probeSocket(filepath.Join(dir, "p.sock")); err != nil {
		t.Fatalf("probe of a serving plugin: %v", err)
	}
	if err := probeSocket(filepath.Join(dir, "absent.sock")); err == nil {
		t.Fatal("probe of no plugin must fail")
	}
	opts, err := c.GetDevicePluginOptions(ctx, &pluginapi.Empty{})
	if err != nil || opts.PreStartRequired || opts.GetPreferredAllocationAvailable {
		t.Fatalf("options: %v %v", opts, err)
	}
}

type scriptedSource struct {
	mu        sync.Mutex
	unhealthy map[string]string
}

func (f *scriptedSource) List() ([]GPU, error) { return testGPUs, nil }
func (f *scriptedSource) Check() map[string]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]string{}
	for k, v := range f.unhealthy {
		out[k] = v
	}
	return out
}
func (f *scriptedSource) Close() {}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestRunRegistersHealthAndKubeletRestart(t *testing.T) {
	dir := shortDir(t)
	kubeletSock := filepath.Join(dir, "kubelet.sock")
	k := startKubelet(t, kubeletSock)
	spec := writeFile(t, dir, "nvidia.json", testSpec)
	fault := filepath.Join(dir, "unhealthy")
	src := &scriptedSource{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	o := options{resource: "nvidia.com/gpu", dir: dir, endpoint: "gpulab.sock", cdiSpec: spec, faultFile: fault, healthInterval: 20 * time.Millisecond}
	go func() { done <- run(ctx, o, src) }()
	waitFor(t, "registration", func() bool { return k.count() == 1 })
	r := k.reqs[0]
	if r.Version != "v1beta1" || r.Endpoint != "gpulab.sock" || r.ResourceName != "nvidia.com/gpu" {
		t.Fatalf("register request: %v", r)
	}

	c := pluginClient(t, filepath.Join(dir, "gpulab.sock"))
	stream, err := c.ListAndWatch(ctx, &pluginapi.Empty{})
	if err != nil {
		t.Fatal(err)
	}
	if first, err := stream.Recv(); err != nil || first.Devices[0].Health != pluginapi.Healthy {
		t.Fatalf("first: %v %v", first, err)
	}
	// The fault file makes every GPU unhealthy; removing it heals them.
	writeFile(t, dir, "unhealthy", "all\n")
	for _, want := range []string{pluginapi.Unhealthy, pluginapi.Healthy} {
		if want == pluginapi.Healthy {
			os.Remove(fault)
		}
		upd, err := stream.Recv()
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range upd.Devices {
			if d.Health != want {
				t.Fatalf("want %s: %v", want, upd.Devices)
			}
		}
	}
	// An NVML verdict from the source also reaches the kubelet.
	src.mu.Lock()
	src.unhealthy = map[string]string{testGPUs[0].UUID: "critical XID 79"}
	src.mu.Unlock()
	if upd, err := stream.Recv(); err != nil || upd.Devices[1].Health != pluginapi.Unhealthy || upd.Devices[0].Health != pluginapi.Healthy {
		t.Fatalf("source verdict: %v %v", upd, err)
	}

	// The kubelet restarts (its socket is re-created): the plugin registers again.
	k.srv.Stop()
	k2 := startKubelet(t, kubeletSock)
	waitFor(t, "registration after the kubelet restarted", func() bool { return k2.count() >= 1 })
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("run: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "gpulab.sock")); !os.IsNotExist(err) {
		t.Fatal("the plugin's socket is removed when it stops")
	}
}

func TestFakeSourceUsesPlaceholderUUIDs(t *testing.T) {
	gpus, err := NewFakeSource(2).List()
	if err != nil || len(gpus) != 2 || gpus[1].UUID != "GPU-00000000-0000-4000-8000-000000000001" || gpus[1].Index != 1 {
		t.Fatalf("%v %v", gpus, err)
	}
}
