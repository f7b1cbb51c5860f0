//go:build cgo

package main

import (
	"fmt"
	"log"
	"sync"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// applicationXids are XIDs caused by the application, not the GPU: a GPU that raised one is
// still healthy. The same list as NVIDIA's device plugin (k8s-device-plugin
// internal/rm/health.go, getDisabledHealthCheckXids, from NVIDIA's XID catalogue).
var applicationXids = map[uint64]bool{13: true, 31: true, 43: true, 45: true, 68: true, 109: true}

// nvmlSource is the real Source: libnvidia-ml.so.1 through go-nvml (dlopen at Init).
type nvmlSource struct {
	lib nvml.Interface
	set nvml.EventSet

	mu   sync.Mutex
	xids map[string]string // UUID -> the critical XID seen (sticky, as upstream)
	stop chan struct{}
	wg   sync.WaitGroup
}

// NewNVMLSource initialises NVML (library: the libnvidia-ml.so.1 to load, "" for the
// library search path's) and registers every GPU for critical-XID and ECC events.
func NewNVMLSource(library string) (Source, error) {
	var opts []nvml.LibraryOption
	if library != "" {
		opts = append(opts, nvml.WithLibraryPath(library))
	}
	lib := nvml.New(opts...)
	if ret := lib.Init(); ret != nvml.SUCCESS {
		return nil, fmt.Errorf("NVML init: %s (is libnvidia-ml.so.1 on the library path? the driver's library directory must be mounted)", lib.ErrorString(ret))
	}
	s := &nvmlSource{lib: lib, xids: map[string]string{}, stop: make(chan struct{})}
	set, ret := lib.EventSetCreate()
	if ret != nvml.SUCCESS {
		log.Printf("NVML event set: %s; XID health events off, handle checks only", lib.ErrorString(ret))
		return s, nil
	}
	s.set = set
	gpus, err := s.List()
	if err != nil {
		lib.Shutdown()
		return nil, err
	}
	mask := uint64(nvml.EventTypeXidCriticalError | nvml.EventTypeDoubleBitEccError | nvml.EventTypeSingleBitEccError)
	for _, g := range gpus {
		dev, ret := lib.DeviceGetHandleByUUID(g.UUID)
		if ret != nvml.SUCCESS {
			continue // Check reports it
		}
		supported, ret := dev.GetSupportedEventTypes()
		if ret != nvml.SUCCESS {
			log.Printf("%s: supported event types: %s; XID events off for it", g.UUID, lib.ErrorString(ret))
			continue
		}
		if ret := dev.RegisterEvents(mask&supported, set); ret != nvml.SUCCESS {
			log.Printf("%s: register events: %s; XID events off for it", g.UUID, lib.ErrorString(ret))
		}
	}
	s.wg.Add(1)
	go s.watch()
	return s, nil
}

func (s *nvmlSource) List() ([]GPU, error) {
	n, ret := s.lib.DeviceGetCount()
	if ret != nvml.SUCCESS {
		return nil, fmt.Errorf("NVML device count: %s", s.lib.ErrorString(ret))
	}
	gpus := make([]GPU, 0, n)
	for i := 0; i < n; i++ {
		dev, ret := s.lib.DeviceGetHandleByIndex(i)
		if ret != nvml.SUCCESS {
			return nil, fmt.Errorf("NVML device %d: %s", i, s.lib.ErrorString(ret))
		}
		uuid, ret := dev.GetUUID()
		if ret != nvml.SUCCESS {
			return nil, fmt.Errorf("NVML device %d UUID: %s", i, s.lib.ErrorString(ret))
		}
		name, _ := dev.GetName()
		minor, ret := dev.GetMinorNumber()
		if ret != nvml.SUCCESS {
			minor = -1
		}
		gpus = append(gpus, GPU{UUID: uuid, Index: i, Name: name, Minor: minor})
	}
	return gpus, nil
}

// Check: a GPU whose handle NVML no longer gives (fallen off the bus, driver gone) or that
// raised a critical XID since the plugin started is unhealthy.
func (s *nvmlSource) Check() map[string]string {
	out := map[string]string{}
	gpus, err := s.List()
	if err != nil {
		log.Printf("health check: %v", err)
	}
	for _, g := range gpus {
		dev, ret := s.lib.DeviceGetHandleByUUID(g.UUID)
		if ret == nvml.SUCCESS {
			_, ret = dev.GetMemoryInfo()
		}
		if ret != nvml.SUCCESS {
			out[g.UUID] = "NVML: " + s.lib.ErrorString(ret)
		}
	}
	s.mu.Lock()
	for uuid, why := range s.xids {
		out[uuid] = why
	}
	s.mu.Unlock()
	return out
}

func (s *nvmlSource) watch() {
	defer s.wg.Done()
	for {
		select {
		case <-s.stop:
			return
		default:
		}
		ev, ret := s.set.Wait(1000)
		if ret == nvml.ERROR_TIMEOUT {
			continue
		}
		if ret != nvml.SUCCESS {
			log.Printf("NVML event wait: %s", s.lib.ErrorString(ret))
			continue
		}
		if ev.EventType != nvml.EventTypeXidCriticalError || applicationXids[ev.EventData] {
			log.Printf("NVML event type %d data %d: not a GPU fault, ignored", ev.EventType, ev.EventData)
			continue
		}
		uuid, ret := ev.Device.GetUUID()
		if ret != nvml.SUCCESS {
			log.Printf("critical XID %d on a device whose UUID NVML does not give: %s", ev.EventData, s.lib.ErrorString(ret))
			continue
		}
		log.Printf("critical XID %d on %s: marking it unhealthy", ev.EventData, uuid)
		s.mu.Lock()
		s.xids[uuid] = fmt.Sprintf("critical XID %d", ev.EventData)
		s.mu.Unlock()
	}
}

func (s *nvmlSource) Close() {
	close(s.stop)
	s.wg.Wait()
	if s.set != nil {
		s.set.Free()
	}
	s.lib.Shutdown()
}
