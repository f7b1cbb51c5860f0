"""Build-time fix for pulumi-kubernetes#2675 (open upstream; proposed fix: PR #4593).

kubeProvider.Delete returns an error for a helm.sh/v3 Release on an unreachable cluster
even when the provider's ``deleteUnreachable`` option is set, while every other resource
kind is then dropped from state. So ``pulumi destroy`` of a lab whose cluster was
deleted by hand would fail on the release alone.

Usage: ``python3 k8s_release_delete_unreachable.py <module-copy-dir>``: patches
``pkg/provider/provider.go`` in a writable copy of the provider module (the build then
points the wrapper module at that copy with a ``replace`` line; ``go build -overlay``
may not replace files in the module cache). Exits 1 when the expected code is not found
(e.g. after a version bump), so the build stops instead of shipping an unpatched provider.
"""

import sys
from pathlib import Path

OLD = """	if isHelmRelease(urn) {
		if k.clusterUnreachable {
			return nil, fmt.Errorf("can't delete Helm Release with unreachable cluster. Reason: %q", k.clusterUnreachableReason)
		}
"""
NEW = """	if isHelmRelease(urn) {
		if k.clusterUnreachable && k.deleteUnreachable {
			// gpu-lab build: honour deleteUnreachable for releases too (pulumi-kubernetes#2675).
			_ = k.host.Log(ctx, diag.Warning, urn, fmt.Sprintf(
				"configured Kubernetes cluster is unreachable: %s; deleteUnreachable is set: "+
					"dropping the Helm Release from state", k.clusterUnreachableReason))
			return &pbempty.Empty{}, nil
		}
		if k.clusterUnreachable {
			return nil, fmt.Errorf("can't delete Helm Release with unreachable cluster. Reason: %q", k.clusterUnreachableReason)
		}
"""


def main(module_copy: str) -> int:
    src = Path(module_copy) / "pkg" / "provider" / "provider.go"
    text = src.read_text()
    if text.count(OLD) != 1:
        print(
            f"{src}: the Helm Release delete branch is not where this patch expects it; "
            "re-check pulumi-kubernetes#2675 for this version",
            file=sys.stderr,
        )
        return 1
    src.write_text(text.replace(OLD, NEW))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
