#!/usr/bin/env bash
# The real-node harness's throwaway PKI (hack/node; workplace only), made with openssl
# when the harness is staged (the GPU machine may lack openssl): a CA; the API server's
# serving certificate (127.0.0.1, the service IP, the bridge gateway); client certificates
# named as kubeadm names them (RBAC's default bindings know these users): the admin
# (system:masters), the controller manager, the scheduler, the kubelet
# (system:node:<node>, group system:nodes, as the Node authorizer wants), the API server's
# kubelet client; and the service-account signing key pair. Valid 7 days; never committed.
#
# Usage: hack/node/pki.sh DIR [NODE]    (NODE: gpulab-h200)
set -euo pipefail
dir=${1:?usage: pki.sh DIR [NODE]}
node=${2:-gpulab-h200}
mkdir -p "$dir"
cd "$dir"
days=7
openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days "$days" -subj "/CN=gpulab-node-ca" 2>/dev/null
cert() { # cert <name> <subject> [subjectAltName]
  openssl req -newkey rsa:2048 -nodes -keyout "$1.key" -out "$1.csr" -subj "$2" 2>/dev/null
  local ext
  ext=$(mktemp)
  if [[ -n ${3:-} ]]; then
    printf 'subjectAltName=%s\nextendedKeyUsage=serverAuth,clientAuth\n' "$3" >"$ext"
  else
    printf 'extendedKeyUsage=clientAuth\n' >"$ext"
  fi
  openssl x509 -req -in "$1.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -out "$1.crt" -days "$days" -extfile "$ext" 2>/dev/null
  rm -f "$1.csr" "$ext"
}
cert apiserver "/CN=kube-apiserver" \
  "DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local,DNS:localhost,IP:127.0.0.1,IP:10.96.0.1,IP:10.88.0.1"
cert admin "/O=system:masters/CN=gpulab-admin"
cert controller-manager "/CN=system:kube-controller-manager"
cert scheduler "/CN=system:kube-scheduler"
cert kubelet "/O=system:nodes/CN=system:node:$node"
cert apiserver-kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client"
openssl genrsa -out sa.key 2048 2>/dev/null
openssl rsa -in sa.key -pubout -out sa.pub 2>/dev/null
rm -f ca.srl
chmod 600 ./*.key
