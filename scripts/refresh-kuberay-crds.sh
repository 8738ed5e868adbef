#!/usr/bin/env bash
# Vendors KubeRay's RayCluster and RayJob CRDs into deploy/kuberay/crds/, unchanged, from the operator's
# Go module (github.com/ray-project/kuberay/ray-operator, fetched with `go mod download`), with the
# module's LICENSE (Apache-2.0) and a README.md that records the version, the commit and each file's
# sha256 (tests/unit/test_deploy.py validates the manifests against these files and checks the hashes).
#
#   scripts/refresh-kuberay-crds.sh            # the version below
#   scripts/refresh-kuberay-crds.sh v1.5.2     # another one: then also update the Helm chart's
#                                              # --version in docs/kubernetes.md (the test compares them)
set -euo pipefail

VERSION="${1:-v1.5.1}"
MODULE=github.com/ray-project/kuberay/ray-operator
FILES=(ray.io_rayclusters.yaml ray.io_rayjobs.yaml)

root="$(cd "$(dirname "$0")/.." && pwd)"
out="$root/deploy/kuberay/crds"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# Outside any Go module (the repository has none), so that no go.mod is read or written.
(cd "$work" && go mod download -json "$MODULE@$VERSION") >"$work/info.json"
{ read -r dir; read -r sum; read -r commit; } < <(python3 -c '
import json, sys
info = json.load(open(sys.argv[1]))
print(info["Dir"], info["Sum"], info.get("Origin", {}).get("Hash", "unknown"), sep="\n")' "$work/info.json")

mkdir -p "$out"
for f in "${FILES[@]}"; do
    install -m 0644 "$dir/config/crd/bases/$f" "$out/$f"
done
install -m 0644 "$dir/LICENSE" "$out/LICENSE"

{
    cat <<EOF
# KubeRay CRDs (vendored)

\`ray.io_rayclusters.yaml\` and \`ray.io_rayjobs.yaml\` are the CustomResourceDefinitions of KubeRay's
operator, copied byte for byte from its Go module: the schemas that \`tests/unit/test_deploy.py\`
validates \`deploy/kuberay/\`'s RayCluster and RayJob against, and the CRDs that the KubeRay Helm chart
of the same version installs (docs/kubernetes.md). Written by \`scripts/refresh-kuberay-crds.sh\`: do not
edit these files by hand.

- module: $MODULE
- version: $VERSION
- commit: $commit (tag ray-operator/$VERSION of github.com/ray-project/kuberay)
- module hash (go.sum): $sum
- path in the module: config/crd/bases/
- license: Apache License 2.0, the module's own \`LICENSE\`, copied beside them; the CRD files carry no
  header of their own (controller-gen generates them from KubeRay's Go types, as their annotation says)

sha256 (checked by the test):

\`\`\`
EOF
    (cd "$out" && sha256sum "${FILES[@]}")
    cat <<EOF
\`\`\`

To refresh them, or to move to another KubeRay version (then update the Helm chart's \`--version\` in
docs/kubernetes.md too; the test compares the two):

\`\`\`sh
scripts/refresh-kuberay-crds.sh $VERSION
\`\`\`
EOF
} >"$out/README.md"

echo "deploy/kuberay/crds/: KubeRay $VERSION ($commit)"
