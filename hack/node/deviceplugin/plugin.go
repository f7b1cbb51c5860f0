package main

import (
	"context"
	"fmt"
	"log"
	"net"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
)

// Plugin serves the kubelet's DevicePlugin service (k8s.io/kubelet
// pkg/apis/deviceplugin/v1beta1 api.proto) for one resource on a unix socket in the
// kubelet's device-plugin directory, and registers it through the kubelet's
// Registration service (kubelet.sock there).
//
// ListAndWatch sends every GPU with its health on connect and again on every change;
// Allocate answers each container's device IDs (GPU UUIDs) with the CDI device names the
// runtime resolves (ContainerAllocateResponse.cdi_devices), and nothing else: the devices,
// libraries and nvidia-smi come from the CDI spec, injected by containerd.
type Plugin struct {
	pluginapi.UnimplementedDevicePluginServer

	Resource string
	Dir      string // the kubelet's device-plugin directory
	Endpoint string // this plugin's socket name in Dir

	gpus []GPU
	cdi  map[string]string // UUID -> CDI device name

	mu       sync.Mutex
	health   map[string]Health
	watchers map[chan []*pluginapi.Device]struct{}
	server   *grpc.Server
}

// NewPlugin makes a plugin for gpus; cdi maps each UUID to its CDI device name
// (CDISpec.Names). Every GPU starts healthy until the first health check.
func NewPlugin(resource, dir, endpoint string, gpus []GPU, cdi map[string]string) *Plugin {
	h := make(map[string]Health, len(gpus))
	for _, g := range gpus {
		h[g.UUID] = Health{Healthy: true}
	}
	return &Plugin{
		Resource: resource, Dir: dir, Endpoint: endpoint,
		gpus: gpus, cdi: cdi, health: h,
		watchers: map[chan []*pluginapi.Device]struct{}{},
	}
}

// Devices is what ListAndWatch sends now: each GPU (ID = UUID) with its health, in index order.
func (p *Plugin) Devices() []*pluginapi.Device {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.devicesLocked()
}

func (p *Plugin) devicesLocked() []*pluginapi.Device {
	gpus := append([]GPU(nil), p.gpus...)
	sort.Slice(gpus, func(i, j int) bool { return gpus[i].Index < gpus[j].Index })
	out := make([]*pluginapi.Device, 0, len(gpus))
	for _, g := range gpus {
		h := pluginapi.Healthy
		if !p.health[g.UUID].Healthy {
			h = pluginapi.Unhealthy
		}
		out = append(out, &pluginapi.Device{ID: g.UUID, Health: h})
	}
	return out
}

// SetHealth records the GPUs' health; when it changed it is sent to every ListAndWatch
// stream (the kubelet then updates the node's allocatable) and true is returned.
func (p *Plugin) SetHealth(h map[string]Health) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if Equal(h, p.health) {
		return false
	}
	p.health = h
	devs := p.devicesLocked()
	for w := range p.watchers {
		select {
		case w <- devs:
		default: // a slow stream gets the newest list on its next receive
			select {
			case <-w:
			default:
			}
			w <- devs
		}
	}
	return true
}

// GetDevicePluginOptions: no PreStartContainer, no GetPreferredAllocation.
func (p *Plugin) GetDevicePluginOptions(context.Context, *pluginapi.Empty) (*pluginapi.DevicePluginOptions, error) {
	return &pluginapi.DevicePluginOptions{}, nil
}

// ListAndWatch streams the device list: now, then on every health change.
func (p *Plugin) ListAndWatch(_ *pluginapi.Empty, s pluginapi.DevicePlugin_ListAndWatchServer) error {
	w := make(chan []*pluginapi.Device, 1)
	p.mu.Lock()
	p.watchers[w] = struct{}{}
	first := p.devicesLocked()
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		delete(p.watchers, w)
		p.mu.Unlock()
	}()
	if err := s.Send(&pluginapi.ListAndWatchResponse{Devices: first}); err != nil {
		return err
	}
	log.Printf("ListAndWatch: sent %d device(s)", len(first))
	for {
		select {
		case <-s.Context().Done():
			return nil
		case devs := <-w:
			if err := s.Send(&pluginapi.ListAndWatchResponse{Devices: devs}); err != nil {
				return err
			}
			log.Printf("ListAndWatch: sent an update")
		}
	}
}

// Allocate answers each container's GPUs with their CDI device names.
func (p *Plugin) Allocate(_ context.Context, req *pluginapi.AllocateRequest) (*pluginapi.AllocateResponse, error) {
	resp := &pluginapi.AllocateResponse{}
	for _, c := range req.GetContainerRequests() {
		cr := &pluginapi.ContainerAllocateResponse{}
		for _, id := range c.GetDevicesIds() {
			name, ok := p.cdi[id]
			if !ok {
				return nil, status.Errorf(codes.InvalidArgument, "unknown device %q for %s", id, p.Resource)
			}
			cr.CdiDevices = append(cr.CdiDevices, &pluginapi.CDIDevice{Name: name})
		}
		log.Printf("Allocate %v -> CDI %v", c.GetDevicesIds(), cdiNames(cr.CdiDevices))
		resp.ContainerResponses = append(resp.ContainerResponses, cr)
	}
	return resp, nil
}

func cdiNames(devs []*pluginapi.CDIDevice) []string {
	out := make([]string, 0, len(devs))
	for _, d := range devs {
		out = append(out, d.GetName())
	}
	return out
}

// GetPreferredAllocation is not offered (GetDevicePluginOptions says so).
func (p *Plugin) GetPreferredAllocation(context.Context, *pluginapi.PreferredAllocationRequest) (*pluginapi.PreferredAllocationResponse, error) {
	return &pluginapi.PreferredAllocationResponse{}, nil
}

// PreStartContainer is not required (GetDevicePluginOptions says so).
func (p *Plugin) PreStartContainer(context.Context, *pluginapi.PreStartContainerRequest) (*pluginapi.PreStartContainerResponse, error) {
	return &pluginapi.PreStartContainerResponse{}, nil
}

// Serve listens on Dir/Endpoint (a stale socket is removed first) and serves until Stop.
func (p *Plugin) Serve() error {
	sock := filepath.Join(p.Dir, p.Endpoint)
	if err := os.Remove(sock); err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("remove stale socket %s: %w", sock, err)
	}
	l, err := net.Listen("unix", sock)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", sock, err)
	}
	srv := grpc.NewServer()
	pluginapi.RegisterDevicePluginServer(srv, p)
	p.mu.Lock()
	p.server = srv
	p.mu.Unlock()
	go func() {
		if err := srv.Serve(l); err != nil {
			log.Printf("serve %s: %v", sock, err)
		}
	}()
	return nil
}

// Stop stops the gRPC server (open ListAndWatch streams end) and removes the socket.
func (p *Plugin) Stop() {
	p.mu.Lock()
	srv := p.server
	p.server = nil
	p.mu.Unlock()
	if srv != nil {
		srv.Stop()
	}
	_ = os.Remove(filepath.Join(p.Dir, p.Endpoint))
}

func dialUnix(ctx context.Context, path string) (*grpc.ClientConn, error) {
	return grpc.NewClient("unix://"+path,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", path)
		}))
}

// Register tells the kubelet (its Registration service on kubeletSocket) about this
// plugin: API version v1beta1, the socket name, the resource.
func (p *Plugin) Register(ctx context.Context, kubeletSocket string) error {
	conn, err := dialUnix(ctx, kubeletSocket)
	if err != nil {
		return err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_, err = pluginapi.NewRegistrationClient(conn).Register(ctx, &pluginapi.RegisterRequest{
		Version:      pluginapi.Version,
		Endpoint:     p.Endpoint,
		ResourceName: p.Resource,
		Options:      &pluginapi.DevicePluginOptions{},
	})
	if err != nil {
		return fmt.Errorf("register %s with the kubelet at %s: %w", p.Resource, kubeletSocket, err)
	}
	return nil
}
