#!/usr/bin/env bash
# The chapter's steps as a plain script, on the same simulated cluster the sim stack uses:
# the baseline `make bench` compares `pulumi up`/`destroy` against.
#   plain-lab.sh up   NAME WORKDIR CHART   -> cluster, helm install --wait, stand-ins, smoke Pod,
#                                           compute Pod (the lab's steps, by hand)
#   plain-lab.sh down NAME WORKDIR         -> delete Pod, helm uninstall, delete ns, cluster down
set -euo pipefail
action=$1 name=$2 workdir=$3
kc="$workdir.kubeconfig"
k() { kubectl --kubeconfig "$kc" "$@"; }
case "$action" in
up)
  chart=$4
  python3 -m variants.sim.ctl up --name "$name" --workdir "$workdir" --gpus 1 >"$workdir.json"
  python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["kubeconfig"])' "$workdir.json" >"$kc"
  k create namespace gpu-operator
  k label namespace gpu-operator pod-security.kubernetes.io/enforce=privileged
  helm --kubeconfig "$kc" install gpu-operator "$chart" -n gpu-operator \
    --set driver.enabled=false --wait --timeout 10m >/dev/null
  # What the operator would do (simulated, as in the sim stack).
  k apply -f - >/dev/null <<'YAML'
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: nvidia-device-plugin-daemonset, namespace: gpu-operator, annotations: {gpulab.dev/simulated: "true"}}
spec:
  selector: {matchLabels: {app: nvidia-device-plugin-daemonset}}
  template:
    metadata: {labels: {app: nvidia-device-plugin-daemonset}}
    spec:
      nodeSelector: {nvidia.com/gpu.deploy.device-plugin: "true"}
      containers: [{name: nvidia-device-plugin, image: "nvcr.io/nvidia/k8s-device-plugin:v0.20.0"}]
YAML
  k patch clusterpolicy cluster-policy --subresource=status --type=merge -p '{"status":{"state":"ready"}}' >/dev/null
  k -n gpu-operator rollout status ds/nvidia-device-plugin-daemonset --timeout=300s >/dev/null
  k wait --for=jsonpath='{.status.state}'=ready clusterpolicy/cluster-policy --timeout=300s >/dev/null
  k get nodes -o jsonpath='{.items[0].status.allocatable.nvidia\.com/gpu}' >/dev/null
  k apply -f - >/dev/null <<'YAML'
apiVersion: v1
kind: Pod
metadata: {name: gpu-smoke}
spec:
  restartPolicy: Never
  containers:
  - name: cuda
    image: nvidia/cuda:12.4.1-base-ubuntu22.04
    command: ["nvidia-smi"]
    resources: {limits: {nvidia.com/gpu: 1}}
YAML
  k wait --for=jsonpath='{.status.phase}'=Succeeded pod/gpu-smoke --timeout=300s >/dev/null
  k logs gpu-smoke | grep 'Driver Version' >/dev/null  # not -q: an early exit would SIGPIPE kubectl (pipefail: 141)
  # The lab's compute check (issue #12), the same work by hand: a CUDA vectorAdd Pod after the
  # smoke Pod, its log must say Test PASSED.
  k apply -f - >/dev/null <<'YAML'
apiVersion: v1
kind: Pod
metadata: {name: gpu-compute}
spec:
  restartPolicy: Never
  containers:
  - name: vectoradd
    image: nvcr.io/nvidia/k8s/cuda-sample:vectoradd-cuda12.5.0
    resources: {limits: {nvidia.com/gpu: 1}}
YAML
  k wait --for=jsonpath='{.status.phase}'=Succeeded pod/gpu-compute --timeout=300s >/dev/null
  k logs gpu-compute | grep 'Test PASSED' >/dev/null
  ;;
down)
  k delete pod gpu-smoke gpu-compute --wait >/dev/null || true
  helm --kubeconfig "$kc" uninstall gpu-operator -n gpu-operator --wait >/dev/null || true
  k delete namespace gpu-operator --wait >/dev/null || true
  python3 -m variants.sim.ctl down --name "$name" --workdir "$workdir"
  rm -f "$kc" "$workdir.json"
  ;;
*) echo "usage: $0 up|down NAME WORKDIR [CHART]" >&2; exit 2 ;;
esac
