// The project's own device plugin for the real-node harness (toolchain/node): the kubelet's
// device-plugin API v1beta1 (k8s.io/kubelet), NVML through go-nvml, CDI device names in Allocate.
module gpulab.local/toolchain/node/deviceplugin

go 1.26.0

require (
	github.com/NVIDIA/go-nvml v0.13.4-1
	google.golang.org/grpc v1.85.0
	k8s.io/kubelet v0.36.3
)

require (
	golang.org/x/net v0.60.0 // indirect
	golang.org/x/sys v0.48.0 // indirect
	golang.org/x/text v0.42.0 // indirect
	google.golang.org/genproto/googleapis/rpc v0.0.0-20260817212433-ac3dfec99bb1 // indirect
	google.golang.org/protobuf v1.36.12 // indirect
)
