"""deploy/: the Dockerfile and the KubeRay manifests of docs/kubernetes.md, checked here without a
cluster or a Docker engine.

- Each RayCluster and RayJob is validated against the openAPIV3Schema of the vendored CRD of its
  apiVersion and kind (deploy/kuberay/crds/), as the API server would with kubectl's strict field
  validation: Kubernetes' structural-schema extensions become JSON Schema (an int-or-string field takes
  either, a `nullable` one null, an object without `x-kubernetes-preserve-unknown-fields` no field its
  schema does not name, list-type maps and sets no duplicate), int32/int64 in range; a field that only
  a CEL rule governs (`x-kubernetes-validations`, which only the API server evaluates) is refused, so
  that nothing goes unchecked. The negative cases prove that the validator rejects what it should.
- What KubeRay's operator itself refuses (its ValidateRayClusterSpec and ValidateRayJobSpec, in part),
  and the `ray start` command line it makes of rayStartParams, parsed by Ray's own `ray start`.
- The ConfigMap's locustfile compiles, defines a User class with tasks, imports nothing the image lacks.
- Every squall command line, the RayJob's entrypoint and those docs/kubernetes.md runs in the cluster,
  goes through squall's own parsers and pre-run checks, so a typo in a flag fails here.
- One Ray version everywhere: requirements/dev.txt's pin, pyproject's extra, the Dockerfile, rayVersion.
- The Dockerfile: its stages, every COPY source in the repository and in the build context that
  .dockerignore leaves, squall as the final stage's entrypoint, base images pinned by tag.
- The vendored CRDs are those scripts/refresh-kuberay-crds.sh recorded (sha256), of the KubeRay version
  that docs/kubernetes.md installs."""

import ast
import contextlib
import copy
import hashlib
import io
import json
import re
import shlex
import sys
from functools import cache
from pathlib import Path
from urllib.parse import urlsplit

import jsonschema
import pytest
import yaml
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet

from squall import thresholds
from squall.cli import build_parser
from squall.commands import bench, mqtt
from squall.distributed import check as check_distributed
from squall.distributed.cluster import LEAN
from squall.durations import parse_duration
from squall.errors import UsageError
from squall.options import run_arguments

tomllib = pytest.importorskip("tomllib", reason="Python 3.11+, as requirements/dev.txt's tools")

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
KUBERAY = DEPLOY / "kuberay"
CRDS = KUBERAY / "crds"
DOCKERFILE = DEPLOY / "Dockerfile"
DOCS = ROOT / "docs" / "kubernetes.md"
Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml: the CRDs are 2 MB of YAML


# ---- the manifests and the CRDs


@cache
def manifests():
    """(file name, document) of every manifest of deploy/kuberay/ (the CRDs aside)."""
    found = []
    for path in sorted(KUBERAY.glob("*.yaml")):
        for doc in yaml.load_all(path.read_text(), Loader=Loader):
            if doc is not None:
                found.append((path.name, doc))
    return tuple(found)


def manifest(kind, name=None):
    docs = [d for _, d in manifests() if d["kind"] == kind and name in (None, d["metadata"]["name"])]
    assert len(docs) == 1, f"expected one {kind} {name or ''} in deploy/kuberay/, found {len(docs)}"
    return copy.deepcopy(docs[0])


@cache
def crds():
    """{(group/version, kind): the version's openAPIV3Schema} of the vendored CRDs' served versions."""
    schemas = {}
    for path in sorted(CRDS.glob("*.yaml")):
        crd = yaml.load(path.read_text(), Loader=Loader)
        assert crd["kind"] == "CustomResourceDefinition", path
        for version in crd["spec"]["versions"]:
            if version.get("served"):
                key = (f"{crd['spec']['group']}/{version['name']}", crd["spec"]["names"]["kind"])
                schemas[key] = version["schema"]["openAPIV3Schema"]
    return schemas


# ---- Kubernetes' structural schemas as JSON Schema

DNS1123_SUBDOMAIN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
LABEL_NAME = r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?"
LABEL_KEY = rf"^({DNS1123_SUBDOMAIN[1:-1]}/)?{LABEL_NAME}$"  # an optional DNS prefix, then a name
LABEL_VALUE = rf"^({LABEL_NAME})?$"
STRING_MAP = {"type": "object", "additionalProperties": {"type": "string"}}

# The root `metadata` of a custom resource is the API server's ObjectMeta (its CRD schema says only
# `type: object`): the fields a manifest writes, checked as the API server checks them.
OBJECT_META = {
    "type": "object",
    "required": ["name"],
    "additionalProperties": False,
    "properties": {
        "name": {"type": "string", "maxLength": 253, "pattern": DNS1123_SUBDOMAIN},
        "namespace": {"type": "string", "maxLength": 63, "pattern": DNS1123_SUBDOMAIN},
        "labels": {
            "type": "object",
            "propertyNames": {"pattern": LABEL_KEY, "maxLength": 317},
            "additionalProperties": {"type": "string", "pattern": LABEL_VALUE},
        },
        "annotations": dict(STRING_MAP, propertyNames={"pattern": LABEL_KEY}),
    },
}

# Built-in kinds the manifests use, with the fields they may write.
CONFIG_MAP = {
    "type": "object",
    "required": ["apiVersion", "kind", "metadata"],
    "additionalProperties": False,
    "properties": {
        "apiVersion": {"const": "v1"},
        "kind": {"const": "ConfigMap"},
        "metadata": OBJECT_META,
        "immutable": {"type": "boolean"},
        "data": dict(STRING_MAP, propertyNames={"pattern": r"^[-._a-zA-Z0-9]+$", "maxLength": 253}),
        "binaryData": dict(STRING_MAP, propertyNames={"pattern": r"^[-._a-zA-Z0-9]+$", "maxLength": 253}),
    },
}
BUILT_IN = {("v1", "ConfigMap"): CONFIG_MAP}


def structural_to_jsonschema(node):
    """A Kubernetes structural schema (an openAPIV3Schema) as the JSON Schema that means the same:

    - `x-kubernetes-int-or-string`: an integer or a string (controller-gen also writes it as an anyOf);
    - `nullable`: null as well;
    - an object takes only the fields its `properties` name, unless `additionalProperties` says
      otherwise or `x-kubernetes-preserve-unknown-fields` keeps unknown fields (the API server prunes
      them, and kubectl's default strict field validation refuses them);
    - `x-kubernetes-embedded-resource`: an object with apiVersion, kind and metadata besides;
    - `x-kubernetes-list-type` and `x-kubernetes-validations` are kept for `Validator`'s own keywords;
      `description` and `default` are dropped (documentation; defaults apply after validation)."""
    if isinstance(node, list):
        return [structural_to_jsonschema(n) for n in node]
    if not isinstance(node, dict):
        return node
    out = {}
    for key, value in node.items():
        if key in ("description", "default"):
            continue
        if key == "properties":
            out[key] = {name: structural_to_jsonschema(s) for name, s in value.items()}
        elif key in ("items", "additionalProperties", "not", "anyOf", "allOf", "oneOf"):
            out[key] = structural_to_jsonschema(value)  # a schema, or a list of them (not a boolean)
        else:
            out[key] = value
    if node.get("x-kubernetes-int-or-string"):
        out.pop("type", None)
        out.setdefault("anyOf", [{"type": "integer"}, {"type": "string"}])
    if node.get("nullable"):
        if "type" in out:
            out["type"] = [out["type"], "null"]
        elif "anyOf" in out:
            out["anyOf"] = [*out["anyOf"], {"type": "null"}]
    if node.get("x-kubernetes-embedded-resource"):
        props = out.setdefault("properties", {})
        props.setdefault("apiVersion", {"type": "string"})
        props.setdefault("kind", {"type": "string"})
        props.setdefault("metadata", OBJECT_META)
    is_object = node.get("type") == "object" or "properties" in node
    if is_object and "additionalProperties" not in node and not node.get("x-kubernetes-preserve-unknown-fields"):
        out["additionalProperties"] = False
    return out


def _list_type(validator, list_type, instance, schema):
    """x-kubernetes-list-type: `set` items unique; `map` items unique by their x-kubernetes-list-map-keys
    (a key left out counts as its default, as the API server defaults it before it compares)."""
    if not validator.is_type(instance, "array"):
        return
    if list_type == "set":
        seen = []
        for item in instance:
            if item in seen:
                yield jsonschema.ValidationError(f"{item!r} is twice in a list-type set")
            seen.append(item)
    elif list_type == "map":
        keys = schema.get("x-kubernetes-list-map-keys", [])
        defaults = {k: p.get("default") for k, p in schema.get("items", {}).get("properties", {}).items()}
        seen = set()
        for item in instance:
            if not isinstance(item, dict):
                continue
            key = tuple(json.dumps(item.get(k, defaults.get(k))) for k in keys)
            if key in seen:
                shown = ", ".join(f"{k}={v}" for k, v in zip(keys, key))
                yield jsonschema.ValidationError(f"a list-type map has two items of one key ({shown})")
            seen.add(key)


def _cel_rules(validator, rules, instance, schema):
    """x-kubernetes-validations: CEL, which only the API server evaluates. A manifest that sets such a
    field would go unchecked here, so it is refused: keep the manifests off these fields."""
    shown = "; ".join(r.get("rule", "?") for r in rules)
    yield jsonschema.ValidationError(f"{instance!r}: a field with CEL rules, not evaluated here ({shown})")


FORMATS = jsonschema.FormatChecker(formats=())


@FORMATS.checks("int32")
def _int32(value):
    return not isinstance(value, int) or -(2**31) <= value < 2**31


@FORMATS.checks("int64")
def _int64(value):
    return not isinstance(value, int) or -(2**63) <= value < 2**63


Validator = jsonschema.validators.extend(
    jsonschema.Draft7Validator,
    {"x-kubernetes-list-type": _list_type, "x-kubernetes-validations": _cel_rules},
)


@cache
def validator_for(api_version, kind):
    if (api_version, kind) in BUILT_IN:
        return Validator(BUILT_IN[(api_version, kind)], format_checker=FORMATS)
    schemas = crds()
    assert (api_version, kind) in schemas, f"no vendored CRD serves {api_version} {kind}: {sorted(schemas)}"
    schema = structural_to_jsonschema(schemas[(api_version, kind)])
    schema["required"] = sorted({*schema.get("required", []), "apiVersion", "kind", "metadata", "spec"})
    schema["properties"]["metadata"] = OBJECT_META
    schema["properties"].pop("status", None)  # written by the operator, never by a manifest
    Validator.check_schema(schema)
    return Validator(schema, format_checker=FORMATS)


def schema_errors(doc):
    """The schema's objections to a manifest, one line each (none when it is valid)."""
    errors = validator_for(doc.get("apiVersion"), doc.get("kind")).iter_errors(doc)
    return [f"{'.'.join(map(str, e.absolute_path)) or '<root>'}: {e.message}" for e in errors]


@pytest.mark.parametrize(
    "doc", [d for _, d in manifests()], ids=[f"{f}:{d['kind']}/{d['metadata']['name']}" for f, d in manifests()]
)
def test_each_manifest_is_valid_against_its_schema(doc):
    assert schema_errors(doc) == []


def test_the_manifests_are_the_three_of_the_walkthrough():
    kinds = sorted((f, d["kind"]) for f, d in manifests())
    assert kinds == [
        ("locustfile-configmap.yaml", "ConfigMap"),
        ("raycluster.yaml", "RayCluster"),
        ("rayjob.yaml", "RayJob"),
    ]


def _set(path, value):
    def mutate(doc):
        *parents, last = path
        node = doc
        for key in parents:
            node = node[key]
        if value is DELETE:
            del node[last]
        else:
            node[last] = value

    return mutate


DELETE = object()
HEAD = ("spec", "headGroupSpec", "template", "spec", "containers", 0)
CPU = (*HEAD, "resources", "limits", "cpu")
PARAMS = ("spec", "headGroupSpec", "rayStartParams")
NOT_ANY = "is not valid under any of the given schemas"
WORKERS = ("spec", "workerGroupSpecs", 0)
BAD = [
    ("misspelt-field", "RayCluster", _set((*PARAMS[:2], "rayStartParam"), {}), "Additional properties"),
    ("unknown-spec-field", "RayCluster", _set(("spec", "specs"), {}), "Additional properties"),
    ("unknown-container-field", "RayCluster", _set((*HEAD, "resource"), {}), "Additional properties"),
    ("number-for-string", "RayCluster", _set((*PARAMS, "num-cpus"), 0), "is not of type 'string'"),
    ("cpu-not-a-quantity", "RayCluster", _set(CPU, "two"), "does not match"),
    ("cpu-a-list", "RayCluster", _set(CPU, [2]), NOT_ANY),
    ("cpu-a-boolean", "RayCluster", _set(CPU, True), NOT_ANY),
    ("container-without-name", "RayCluster", _set((*HEAD, "name"), DELETE), "'name' is a required property"),
    ("group-without-name", "RayCluster", _set((*WORKERS, "groupName"), DELETE), "'groupName' is a required property"),
    ("replicas-a-string", "RayCluster", _set((*WORKERS, "replicas"), "4"), "is not of type 'integer'"),
    ("replicas-past-int32", "RayCluster", _set((*WORKERS, "replicas"), 2**31), "is not a 'int32'"),
    ("duplicate-port", "RayCluster", _set((*HEAD, "ports", 1, "containerPort"), 6379), "two items of one key"),
    ("cel-governed-field", "RayCluster", _set(("spec", "managedBy"), "ray.io/kuberay-operator"), "CEL rules"),
    ("name-with-capitals", "RayCluster", _set(("metadata", "name"), "Squall"), "does not match"),
    ("label-value-with-space", "RayCluster", _set(("metadata", "labels", "app"), "a b"), "does not match"),
    ("no-metadata", "RayCluster", _set(("metadata",), DELETE), "'metadata' is a required property"),
    ("entrypoint-a-list", "RayJob", _set(("spec", "entrypoint"), ["squall"]), "is not of type 'string'"),
    ("selector-a-number", "RayJob", _set(("spec", "clusterSelector", "ray.io/cluster"), 1), "is not of type 'string'"),
    ("backoff-a-fraction", "RayJob", _set(("spec", "backoffLimit"), 0.5), "is not of type 'integer'"),
    ("misspelt-job-field", "RayJob", _set(("spec", "entrypointNumCPUs"), 1), "Additional properties"),
    ("configmap-value-a-number", "ConfigMap", _set(("data", "locustfile.py"), 1), "is not of type 'string'"),
    ("configmap-key-with-slash", "ConfigMap", _set(("data", "a/b.py"), ""), "does not match"),
]


@pytest.mark.parametrize("kind, mutate, message", [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_the_validator_rejects_a_broken_manifest(kind, mutate, message):
    doc = manifest(kind)
    assert schema_errors(doc) == []
    mutate(doc)
    errors = schema_errors(doc)
    assert any(message in e for e in errors), errors


@pytest.mark.parametrize("cpu", [2, "2", "500m", 0.5])
def test_int_or_string_fields_take_either(cpu):
    doc = manifest("RayCluster")
    doc["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["cpu"] = cpu
    errors = schema_errors(doc)
    # A quantity is an integer or a string; 0.5 is neither (JSON Schema's integer is a whole number).
    assert (errors == []) == (cpu != 0.5), errors


def test_the_kubernetes_extensions():
    """On a schema of its own: the CRDs in use have no preserve-unknown-fields or embedded resource."""
    schema = structural_to_jsonschema(
        {
            "type": "object",
            "properties": {
                "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                "closed": {"type": "object", "properties": {"a": {"type": "string"}}},
                "map": {"type": "object", "additionalProperties": {"type": "integer"}},
                "port": {"x-kubernetes-int-or-string": True},
                "maybe": {"type": "string", "nullable": True},
                "tags": {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "set"},
                "pod": {"type": "object", "x-kubernetes-embedded-resource": True, "properties": {}},
            },
        }
    )
    v = Validator(schema, format_checker=FORMATS)
    good = {
        "free": {"anything": [1, {"x": None}]},
        "closed": {"a": "b"},
        "map": {"x": 1},
        "port": 8080,
        "maybe": None,
        "tags": ["a", "b"],
        "pod": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}},
    }
    assert list(v.iter_errors(good)) == []
    assert v.is_valid({"port": "http"})
    for bad in [
        {"closed": {"a": "b", "c": "d"}},
        {"map": {"x": "1"}},
        {"port": 1.5},
        {"port": None},
        {"maybe": 1},
        {"tags": ["a", "a"]},
        {"pod": {"spec": {}}},
        {"pod": {"metadata": {"name": "Pod!"}}},
        {"unknown": 1},
    ]:
        assert not v.is_valid(bad), bad


# ---- what KubeRay's operator checks beyond the schema, and `ray start`

DNS1035_LABEL = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
MAX_NAME = {"RayCluster": 53, "RayJob": 47}  # KubeRay's MaxRayClusterNameLength, MaxRayJobNameLength
RESOURCE_PARAMS = ("num-cpus", "num-gpus", "memory", "resources")
BOOLEAN_AS_VALUE = ("log-color", "include-dashboard")  # KubeRay passes these with =true/=false


def groups(cluster_spec):
    """(name, group spec, node type) of a RayCluster spec's head and worker groups."""
    yield "head", cluster_spec["headGroupSpec"], "head"
    for group in cluster_spec.get("workerGroupSpecs", []):
        yield group["groupName"], group, "worker"


def cluster_specs():
    for _, doc in manifests():
        if doc["kind"] == "RayCluster":
            yield doc["metadata"]["name"], doc["spec"]
        elif doc["kind"] == "RayJob" and "rayClusterSpec" in doc["spec"]:
            yield doc["metadata"]["name"], doc["spec"]["rayClusterSpec"]


def ray_start_argv(params):
    """The options KubeRay's operator makes of rayStartParams (its convertParamMap): `--key=value`,
    except that a "true" becomes a bare `--key` and a "false" is dropped."""
    argv = []
    for key in sorted(params):
        value = params[key]
        if value.lower() in ("true", "false") and key not in BOOLEAN_AS_VALUE:
            argv += [f"--{key}"] if value.lower() == "true" else []
        else:
            argv.append(f"--{key}={value}")
    return argv


def test_what_the_operator_refuses():
    for _, doc in manifests():
        kind, name = doc["kind"], doc["metadata"]["name"]
        if kind in MAX_NAME:
            assert DNS1035_LABEL.match(name) and len(name) <= MAX_NAME[kind], f"{kind} {name}: KubeRay refuses it"
    for cluster, spec in cluster_specs():
        for group, g, _ in groups(spec):
            where = f"{cluster}, group {group}"
            assert g["template"]["spec"].get("containers"), f"{where}: no container"
            params = g.get("rayStartParams", {})
            assert not (any(p in params for p in RESOURCE_PARAMS) and g.get("resources")), f"{where}: resources twice"
            assert "labels" not in params, f"{where}: rayStartParams['labels'] (use the group's labels)"
    job = manifest("RayJob")["spec"]
    assert ("rayClusterSpec" in job) != ("clusterSelector" in job), "a RayJob has a cluster spec or a selector"
    if "clusterSelector" in job:
        selected = job["clusterSelector"].get("ray.io/cluster")
        assert selected in {name for name, _ in cluster_specs()}, f"no RayCluster {selected} in deploy/kuberay/"
        assert job.get("submissionMode", "K8sJobMode") != "SidecarMode", "SidecarMode takes no clusterSelector"
        assert not job.get("suspend")
    assert job.get("backoffLimit", 0) >= 0 and job.get("activeDeadlineSeconds", 1) > 0


def test_ray_start_takes_the_rayStartParams():
    """Each group's rayStartParams, as the operator passes them, parsed by Ray's own `ray start`: an
    unknown option or a bad value fails here, not in a pod that restarts forever."""
    click = pytest.importorskip("click")
    scripts = pytest.importorskip("ray.scripts.scripts", reason="Ray (requirements/dev.txt)")
    for cluster, spec in cluster_specs():
        for group, g, node_type in groups(spec):
            params = g.get("rayStartParams", {})
            for key, value in params.items():
                assert isinstance(value, str), f"{cluster}/{group}: {key} must be a string"
                assert value.lower() != "false" or key in BOOLEAN_AS_VALUE, (
                    f"{cluster}/{group}: {key}: 'false' is dropped by the operator (use '0')"
                )
            argv = ray_start_argv(params) + (["--head"] if node_type == "head" else ["--address=head:6379"])
            try:
                ctx = scripts.start.make_context("ray start", argv)
            except click.ClickException as e:
                pytest.fail(f"{cluster}/{group}: ray start {' '.join(argv)}: {e.format_message()}")
            if "include-log-monitor" in params:
                assert ctx.params["include_log_monitor"] is False


def test_the_run_goes_on_the_head_and_the_workers_have_the_cpus():
    """The entrypoint of a RayJob runs on the head (where the locustfile and /results are) as long as it
    asks Ray for nothing; the head gives Ray no CPUs, so that the load goes to the worker pods."""
    job = manifest("RayJob")["spec"]
    for field in ("entrypointNumCpus", "entrypointNumGpus", "entrypointResources"):
        assert field not in job, f"{field} would place the entrypoint off the head"
    cluster = manifest("RayCluster", job["clusterSelector"]["ray.io/cluster"])["spec"]
    assert cluster["headGroupSpec"]["rayStartParams"]["num-cpus"] == "0"
    assert cluster.get("enableInTreeAutoscaling") is False


# ---- the locustfile


def locustfile_mount():
    """(path of the locustfile on the head, its source) from the ConfigMap mounted there."""
    head = manifest("RayCluster")["spec"]["headGroupSpec"]["template"]["spec"]
    config_maps = {v["name"]: v["configMap"]["name"] for v in head["volumes"] if "configMap" in v}
    (mount,) = [m for m in head["containers"][0]["volumeMounts"] if m["name"] in config_maps]
    data = manifest("ConfigMap", config_maps[mount["name"]])["data"]
    (key,) = [k for k in data if k.endswith(".py")]
    return f"{mount['mountPath'].rstrip('/')}/{key}", data[key]


USER_BASES = {"User", "HttpUser", "FastHttpUser", "MqttUser"}


def _name(node):
    """The name a base class or a decorator is written with: `task`, `locust.task`, `task(3)`."""
    node = getattr(node, "func", node)
    return getattr(node, "id", getattr(node, "attr", None))


def user_classes(source):
    """{name: has tasks} of the classes of a locustfile that derive from one of Locust's User classes."""
    found = {}
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.ClassDef) or not {_name(b) for b in node.bases} & USER_BASES:
            continue
        methods = [f for f in node.body if isinstance(f, ast.FunctionDef)]
        decorated = any(_name(d) == "task" for f in methods for d in f.decorator_list)
        assigned = [t for s in node.body if isinstance(s, ast.Assign) for t in s.targets]
        found[node.name] = decorated or any(_name(t) == "tasks" for t in assigned)
    return found


def test_the_locustfile_of_the_configmap():
    path, source = locustfile_mount()
    compile(source, path, "exec")
    classes = user_classes(source)
    assert classes and all(classes.values()), f"{path}: User classes with tasks expected, found {classes}"
    # The pods have squall and the standard library (and `locust`, which squall resolves to itself).
    for node in ast.walk(ast.parse(source)):
        names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
        names += [node.module] if isinstance(node, ast.ImportFrom) and node.module else []
        for name in names:
            top = name.split(".")[0]
            assert top in {"locust", "squall"} | sys.stdlib_module_names, f"{path} imports {name}: not in the image"


# ---- squall's command lines


def docs_commands():
    """The squall command lines of docs/kubernetes.md's shell blocks (`kubectl exec ... -- squall ...`
    and the ones run locally), each a list of words."""
    text = DOCS.read_text()
    commands = []
    for block in re.findall(r"```(?:sh|bash|console)\n(.*?)```", text, re.S):
        for line in block.replace("\\\n", " ").splitlines():
            words = shlex.split(line, comments=True)
            for i, word in enumerate(words):
                if word == "squall" and (i == 0 or words[i - 1] == "--"):
                    end = next((j for j in range(i, len(words)) if words[j] in ("|", "&&", ";", ">", "||")), len(words))
                    commands.append(words[i:end])
    return commands


def entrypoints():
    """The RayJobs' entrypoints as words. KubeRay's submitter pod runs `ray job submit -- ENTRYPOINT` in
    bash, which splits it as shlex does, and Ray quotes the words again for the shell that runs them;
    an operator or a variable would be the submitter's, so there are none."""
    found = []
    for _, doc in manifests():
        if doc["kind"] == "RayJob":
            entrypoint = doc["spec"]["entrypoint"]
            lexer = shlex.shlex(entrypoint, posix=True, punctuation_chars=True)  # operators outside quotes
            operators = [w for w in lexer if set(w) <= set("();<>|&")]
            assert not operators and not set("$`") & set(entrypoint), f"the submitter's shell takes: {entrypoint}"
            found.append(shlex.split(entrypoint))
    return found


def parse_squall(words):
    """squall's parse of a command line, as `squall.cli.main` does it (squall -f ... is `run`); a
    mistake fails the test with squall's own message."""
    assert words[0] == "squall"
    argv = words[1:]
    if argv and argv[0].startswith("-"):
        argv = ["run", *argv]
    parser, run_parser = build_parser()
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        try:
            args = parser.parse_args(argv)
        except SystemExit:
            pytest.fail(f"{shlex.join(words)}\n{err.getvalue()}")
        if args.command == "run":
            code = run_arguments.check_unsupported(args, run_parser)
            assert code is None, f"{shlex.join(words)}\n{err.getvalue()}"
    return args


OUTPUTS = ("html", "json", "json_file", "result_json", "csv")


def check_squall_run_in_cluster(words):
    """A squall command run in the cluster: it parses, passes the checks squall makes before a run,
    runs on the cluster (`--ray auto`), and writes its reports where they can be read (/results)."""
    args = parse_squall(words)
    shown = shlex.join(words)
    assert args.command in ("run", "bench", "mqtt"), shown
    assert args.ray == "auto", f"{shown}: --ray auto runs it on the cluster the pod belongs to"
    check_distributed(args)
    thresholds.from_args(args)
    if args.command == "run":
        path, source = locustfile_mount()
        assert args.locustfile == path, f"{shown}: the locustfile is mounted at {path}"
        unknown = set(args.user_classes) - set(user_classes(source))
        assert not unknown, f"{shown}: no User class {unknown} (a stray word?)"
        assert int(args.users) >= 1 and float(args.spawn_rate) > 0
        if args.run_time:
            parse_duration(args.run_time)
        if args.host:
            assert urlsplit(args.host).scheme in ("http", "https") and urlsplit(args.host).netloc, shown
    elif args.command == "bench":
        bench.engine_config(args)
    else:
        mqtt.engine_config(args)
    for dest in OUTPUTS:
        value = getattr(args, dest, None)
        if isinstance(value, str):
            assert value.startswith("/results/"), f"{shown}: --{dest.replace('_', '-')} outside /results"
    return args


@pytest.mark.parametrize("words", entrypoints(), ids=lambda w: " ".join(w[:3]))
def test_the_rayjob_entrypoint_is_a_squall_run(words):
    args = check_squall_run_in_cluster(words)
    assert args.command == "run" and args.headless, "a RayJob has no one to press Start"
    job = manifest("RayJob")["spec"]
    cluster = manifest("RayCluster", job["clusterSelector"]["ray.io/cluster"])["spec"]
    cpus = sum(
        g["replicas"] * int(g["template"]["spec"]["containers"][0]["resources"]["limits"]["cpu"])
        for g in cluster["workerGroupSpecs"]
    )
    assert args.workers is not None and args.workers <= cpus, f"--workers {args.workers}, for {cpus} CPUs"


def test_the_docs_squall_commands():
    commands = docs_commands()
    assert len(commands) >= 3, commands
    for words in commands:
        if words[1:2] == ["report"]:  # run where the results were copied to
            parse_squall(words)
        else:
            check_squall_run_in_cluster(words)


def test_a_typo_in_a_flag_fails():
    entry = entrypoints()[0]
    for typo in (["--head-less"], ["--workers", "0"], ["--ray"], ["--json", "/results/x"], ["--threshold", "p95 <"]):
        with pytest.raises((pytest.fail.Exception, AssertionError, UsageError)):
            check_squall_run_in_cluster([*entry, *typo])


# ---- versions and the Dockerfile


def pinned(name):
    for line in (ROOT / "requirements" / "dev.txt").read_text().splitlines():
        if line.lower().startswith(f"{name.lower()}=="):
            return line.split("==", 1)[1].strip()
    raise AssertionError(f"{name} is not pinned in requirements/dev.txt")


def pyproject():
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def dockerfile():
    """The Dockerfile's instructions, (INSTRUCTION, arguments), continuations joined and comments out."""
    instructions, pending = [], ""
    for line in DOCKERFILE.read_text().splitlines():
        stripped = line.strip()
        if stripped.startswith("#") or (not stripped and not pending):
            continue
        if stripped.endswith("\\"):
            pending += stripped[:-1] + " "
            continue
        word, _, rest = (pending + stripped).partition(" ")
        instructions.append((word.upper(), rest.strip()))
        pending = ""
    assert not pending, "a continuation at the end of the Dockerfile"
    return instructions


def substitute(text, variables):
    def value(m):
        name = m.group(1) or m.group(2)
        assert name in variables, f"${name} is not an ARG with a default"
        return variables[name]

    return re.sub(r"\$\{(\w+)\}|\$(\w+)", value, text)


def stages():
    """[{name, base, args, env, instructions}] of the Dockerfile, with ARG defaults substituted into FROM."""
    global_args, found = {}, []
    for word, rest in dockerfile():
        if word == "ARG" and not found:
            name, _, default = rest.partition("=")
            global_args[name] = substitute(default, global_args)
        elif word == "FROM":
            parts = rest.split()
            name = parts[2] if len(parts) == 3 and parts[1].upper() == "AS" else None
            found.append({"name": name, "base": substitute(parts[0], global_args), "args": dict(global_args)})
            found[-1].update(env={}, instructions=[])
        else:
            assert found, f"{word} before any FROM"
            found[-1]["instructions"].append((word, rest))
            if word == "ARG":
                name, _, default = rest.partition("=")
                found[-1]["args"][name] = default or global_args.get(name, "")
            elif word == "ENV":
                for pair in shlex.split(rest):
                    key, _, value = pair.partition("=")
                    found[-1]["env"][key] = value
    return global_args, found


def copies(stage):
    """(flags, sources, destination) of a stage's COPY and ADD instructions."""
    for word, rest in stage["instructions"]:
        if word in ("COPY", "ADD"):
            words = json.loads(rest) if rest.startswith("[") else shlex.split(rest)
            flags = {w.split("=", 1)[0]: w.split("=", 1)[-1] for w in words if w.startswith("--")}
            paths = [w for w in words if not w.startswith("--")]
            yield flags, paths[:-1], paths[-1]


def test_one_ray_version_everywhere():
    ray = pinned("ray")
    global_args, (build, runtime) = stages()
    assert global_args["RAY_VERSION"] == ray
    assert build["base"] == runtime["base"] == f"rayproject/ray:{ray}-{global_args['PYTHON_TAG']}-cpu"
    assert "RAY_VERSION" in runtime["args"], "the runtime stage checks the Ray it installs"
    (extra,) = [Requirement(r) for r in pyproject()["project"]["optional-dependencies"]["ray"]]
    assert extra.name == "ray" and extra.specifier.contains(ray), f"squall[ray] is {extra}, the pin {ray}"
    python = re.fullmatch(r"py3(\d+)", global_args["PYTHON_TAG"]).group(1)
    assert SpecifierSet(pyproject()["project"]["requires-python"]).contains(f"3.{python}")
    for _, spec in cluster_specs():
        assert spec["rayVersion"] == ray


def test_one_image_for_every_pod():
    version = pyproject()["project"]["version"]
    images = set()
    for _, spec in cluster_specs():
        for _, g, _ in groups(spec):
            images |= {c["image"] for c in g["template"]["spec"]["containers"]}
    assert images == {f"squall:{version}"}, "head and workers run one image, the one docs/kubernetes.md builds"
    assert f"-t squall:{version} ." in DOCS.read_text()


def test_the_build_tools_are_the_pinned_ones():
    _, (build, _) = stages()
    assert build["args"]["MATURIN_VERSION"] == pinned("maturin")
    least = tomllib.loads((ROOT / "Cargo.toml").read_text())["workspace"]["package"]["rust-version"]
    as_tuple = lambda v: tuple(int(p) for p in v.split("."))
    assert as_tuple(build["args"]["RUST_VERSION"]) >= as_tuple(least)


def test_the_dockerfile():
    _, found = stages()
    names = [s["name"] for s in found]
    for i, stage in enumerate(found):
        base = stage["base"]
        assert re.fullmatch(r"[\w./-]+:[\w.-]+(@sha256:[0-9a-f]{64})?", base) and not base.endswith(":latest"), (
            f"{base}: pin base images by tag"
        )
        for flags, sources, _ in copies(stage):
            if "--from" in flags:
                assert flags["--from"] in names[:i], f"COPY --from={flags['--from']}: no such earlier stage"
                continue
            for source in sources:
                assert (ROOT / source).exists(), f"COPY {source}: not in the repository"
    final = found[-1]
    (entrypoint,) = [json.loads(rest) for word, rest in final["instructions"] if word == "ENTRYPOINT"]
    assert entrypoint == ["squall"], "the image runs squall (KubeRay sets its own command for ray start)"
    assert [w for w, _ in final["instructions"]].count("CMD") == 1
    # Ray's daemons in the pods as lean as squall's driver makes itself.
    assert {k: final["env"].get(k) for k in LEAN} == LEAN


def dockerignore():
    """.dockerignore's rules as (negated, regex), in order: Docker's patterns (`*` within a path
    element, `**` across them), matching a path or any of its parent directories."""
    rules = []
    for line in (ROOT / ".dockerignore").read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        negated = line.startswith("!")
        pattern = line.lstrip("!").strip().strip("/")
        regex = re.escape(pattern).replace(r"\*\*/", "(.*/)?").replace(r"\*\*", ".*").replace(r"\*", "[^/]*")
        rules.append((negated, re.compile(regex.replace(r"\?", "[^/]"))))
    return rules


def in_context(path):
    parts = path.split("/")
    prefixes = ["/".join(parts[:n]) for n in range(1, len(parts) + 1)]
    included = True
    for negated, regex in dockerignore():
        if any(regex.fullmatch(p) for p in prefixes):
            included = negated
    return included


def test_the_build_context():
    for stage in stages()[1]:
        for flags, sources, _ in copies(stage):
            for source in sources if "--from" not in flags else []:
                top = ROOT / source
                files = [top] if top.is_file() else [p for p in top.rglob("*") if p.is_file()]
                for f in files:
                    rel = f.relative_to(ROOT).as_posix()
                    if "__pycache__" in f.parts or f.suffix in (".so", ".pyc"):
                        assert not in_context(rel), rel
                    else:
                        assert in_context(rel), f"{rel}: COPY needs it, .dockerignore leaves it out"
    for left_out in ("target/release/libx.so", ".venv/bin/python", "web/node_modules/x/y.js", ".git/HEAD",
                     "tests/unit/test_deploy.py", "deploy/Dockerfile"):  # fmt: skip
        assert not in_context(left_out), left_out


# ---- the vendored CRDs


def test_the_vendored_crds_are_the_recorded_ones():
    readme = (CRDS / "README.md").read_text()
    recorded = dict(reversed(line.split()) for line in re.findall(r"^[0-9a-f]{64}  \S+$", readme, re.M))
    files = sorted(p.name for p in CRDS.glob("*.yaml"))
    assert sorted(recorded) == files == ["ray.io_rayclusters.yaml", "ray.io_rayjobs.yaml"]
    for name, digest in recorded.items():
        assert hashlib.sha256((CRDS / name).read_bytes()).hexdigest() == digest, f"{name} is not as vendored"
    assert (CRDS / "LICENSE").read_text().lstrip().startswith("Apache License")
    (version,) = re.findall(r"^- version: v(\S+)$", readme, re.M)
    script = (ROOT / "scripts" / "refresh-kuberay-crds.sh").read_text()
    assert f'VERSION="${{1:-v{version}}}"' in script
    helm = re.findall(r"helm (?:install|upgrade)[^\n]*kuberay/kuberay-operator[^\n]*--version (\S+)", DOCS.read_text())
    assert helm and set(helm) == {version}, "docs/kubernetes.md installs the operator of the vendored CRDs"
