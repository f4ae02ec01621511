package k8s

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"
)

// kinds maps each kind the base may hold to its apiVersion and a new typed
// object to decode it into.
var kinds = map[string]struct {
	apiVersion string
	obj        func() any
}{
	"Deployment":              {"apps/v1", func() any { return new(appsv1.Deployment) }},
	"DaemonSet":               {"apps/v1", func() any { return new(appsv1.DaemonSet) }},
	"Service":                 {"v1", func() any { return new(corev1.Service) }},
	"ConfigMap":               {"v1", func() any { return new(corev1.ConfigMap) }},
	"PodDisruptionBudget":     {"policy/v1", func() any { return new(policyv1.PodDisruptionBudget) }},
	"HorizontalPodAutoscaler": {"autoscaling/v2", func() any { return new(autoscalingv2.HorizontalPodAutoscaler) }},
	"ServiceMonitor":          {"monitoring.coreos.com/v1", func() any { return new(monitoringv1.ServiceMonitor) }},
}

// decodeStrict decodes one YAML document into its typed k8s.io/api (or
// prometheus-operator) object: an unknown or misspelt field, a duplicate
// key, a wrong type or an unknown kind/apiVersion is an error.
func decodeStrict(doc []byte) (any, error) {
	var tm metav1.TypeMeta
	if err := yaml.Unmarshal(doc, &tm); err != nil {
		return nil, err
	}
	k, ok := kinds[tm.Kind]
	if !ok {
		return nil, fmt.Errorf("kind %q is not one the base may hold", tm.Kind)
	}
	if tm.APIVersion != k.apiVersion {
		return nil, fmt.Errorf("%s: apiVersion %q, want %q", tm.Kind, tm.APIVersion, k.apiVersion)
	}
	obj := k.obj()
	if err := yaml.UnmarshalStrict(doc, obj); err != nil {
		return nil, fmt.Errorf("%s: %w", tm.Kind, err)
	}
	return obj, nil
}

// kustomization is the subset of kustomize's Kustomization the base uses,
// decoded strictly too.
type kustomization struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Labels     []struct {
		Pairs            map[string]string `json:"pairs"`
		IncludeSelectors bool              `json:"includeSelectors"`
	} `json:"labels"`
	Resources []string `json:"resources"`
	Images    []struct {
		Name    string `json:"name"`
		NewName string `json:"newName"`
		NewTag  string `json:"newTag"`
	} `json:"images"`
	ConfigMapGenerator []struct {
		Name    string   `json:"name"`
		Files   []string `json:"files"`
		Options *struct {
			DisableNameSuffixHash bool              `json:"disableNameSuffixHash"`
			Labels                map[string]string `json:"labels"`
		} `json:"options"`
	} `json:"configMapGenerator"`
}

// base is the decoded base: the kustomization and one object per resource.
type base struct {
	k      kustomization
	deploy *appsv1.Deployment
	ds     *appsv1.DaemonSet
	svc    *corev1.Service
	pdb    *policyv1.PodDisruptionBudget
	hpa    *autoscalingv2.HorizontalPodAutoscaler
	sm     *monitoringv1.ServiceMonitor
}

func load(t *testing.T) *base {
	t.Helper()
	var b base
	raw, err := os.ReadFile("kustomization.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(raw, &b.k); err != nil {
		t.Fatalf("kustomization.yaml: %v", err)
	}
	if b.k.APIVersion != "kustomize.config.k8s.io/v1beta1" || b.k.Kind != "Kustomization" {
		t.Fatalf("kustomization.yaml: %s %s", b.k.APIVersion, b.k.Kind)
	}
	for _, r := range b.k.Resources {
		doc, err := os.ReadFile(r)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(doc, []byte("\n---")) {
			t.Fatalf("%s: one object per file, please", r)
		}
		obj, err := decodeStrict(doc)
		if err != nil {
			t.Fatalf("%s: %v", r, err)
		}
		switch o := obj.(type) {
		case *appsv1.Deployment:
			b.deploy = o
		case *appsv1.DaemonSet:
			b.ds = o
		case *corev1.Service:
			b.svc = o
		case *policyv1.PodDisruptionBudget:
			b.pdb = o
		case *autoscalingv2.HorizontalPodAutoscaler:
			b.hpa = o
		case *monitoringv1.ServiceMonitor:
			b.sm = o
		}
	}
	if b.deploy == nil || b.ds == nil || b.svc == nil || b.pdb == nil || b.hpa == nil || b.sm == nil {
		t.Fatalf("the base lacks a Deployment, DaemonSet, Service, PDB, HPA or ServiceMonitor")
	}
	return &b
}

func TestManifestsDecodeStrictly(t *testing.T) { load(t) }

// TestStrictDecodeRejects: the decoder used above does fail on what it
// must (so a passing decode means something).
func TestStrictDecodeRejects(t *testing.T) {
	for name, doc := range map[string]string{
		"misspelt field": "apiVersion: apps/v1\nkind: Deployment\nspec:\n  replica: 2\n",
		"unknown field":  "apiVersion: v1\nkind: Service\nspec:\n  ports:\n  - port: 1\n    targtPort: 2\n",
		"wrong type":     "apiVersion: policy/v1\nkind: PodDisruptionBudget\nspec:\n  selector: yes\n",
		"duplicate key":  "apiVersion: v1\nkind: Service\nmetadata:\n  name: a\n  name: b\n",
		"old apiVersion": "apiVersion: autoscaling/v1\nkind: HorizontalPodAutoscaler\n",
		"unknown kind":   "apiVersion: v1\nkind: Pod\n",
		"servicemonitor": "apiVersion: monitoring.coreos.com/v1\nkind: ServiceMonitor\nspec:\n  endpoint: []\n",
	} {
		if _, err := decodeStrict([]byte(doc)); err == nil {
			t.Errorf("%s: decoded without error", name)
		}
	}
}

// flagValue returns -name's value in args (-name=v or -name v), or "".
func flagValue(args []string, name string) string {
	for i, a := range args {
		if v, ok := strings.CutPrefix(a, "-"+name+"="); ok {
			return v
		}
		if a == "-"+name && i+1 < len(args) {
			return args[i+1]
		}
	}
	return ""
}

func TestDeploymentSecurity(t *testing.T) {
	b := load(t)
	pod := b.deploy.Spec.Template.Spec
	psc := pod.SecurityContext
	if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.RunAsUser == nil || *psc.RunAsUser != 65532 {
		t.Errorf("pod securityContext must run as non-root uid 65532: %+v", psc)
	}
	if psc == nil || psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeLocalhost ||
		psc.SeccompProfile.LocalhostProfile == nil || *psc.SeccompProfile.LocalhostProfile != "uringrt/seccomp-io_uring.json" {
		t.Errorf("pod seccompProfile must be Localhost uringrt/seccomp-io_uring.json: %+v", psc)
	}
	if pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken {
		t.Error("automountServiceAccountToken must be false")
	}
	if len(pod.Containers) != 1 {
		t.Fatalf("%d containers, want 1", len(pod.Containers))
	}
	c := pod.Containers[0]
	sc := c.SecurityContext
	if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
		t.Error("readOnlyRootFilesystem must be true")
	}
	if sc == nil || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
		t.Error("allowPrivilegeEscalation must be false")
	}
	if sc == nil || sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) != 0 {
		t.Errorf("capabilities must drop ALL and add none: %+v", sc)
	}
	if sc != nil && sc.Privileged != nil && *sc.Privileged {
		t.Error("privileged")
	}
	// CPU requests = limits, whole CPUs: GOMAXPROCS (Go 1.25+ reads the
	// cgroup limit) and so the loop count follow the limit.
	req, lim := c.Resources.Requests.Cpu(), c.Resources.Limits.Cpu()
	if lim.IsZero() || req.Cmp(*lim) != 0 || lim.MilliValue()%1000 != 0 {
		t.Errorf("cpu requests %v, limits %v: want equal whole CPUs", req, lim)
	}
	if m := c.Resources.Limits.Memory(); m.IsZero() || m.Cmp(*c.Resources.Requests.Memory()) != 0 {
		t.Errorf("memory limit %v must be set and equal the request", m)
	}
	// Probes on the metrics port: /healthz for liveness, /readyz for readiness.
	for _, p := range []struct {
		name  string
		probe *corev1.Probe
		path  string
	}{{"liveness", c.LivenessProbe, "/healthz"}, {"readiness", c.ReadinessProbe, "/readyz"}} {
		if p.probe == nil || p.probe.HTTPGet == nil || p.probe.HTTPGet.Path != p.path || p.probe.HTTPGet.Port != intstr.FromString("metrics") {
			t.Errorf("%s probe must GET %s on port metrics: %+v", p.name, p.path, p.probe)
		}
	}
	// /metrics published on purpose (the kubelet and Prometheus reach it),
	// without the host details.
	if got := flagValue(c.Args, "metrics-addr"); got != "0.0.0.0:9100" {
		t.Errorf("-metrics-addr %q, want 0.0.0.0:9100 set explicitly", got)
	}
	if got := flagValue(c.Args, "metrics-host-info"); got != "off" {
		t.Errorf("-metrics-host-info %q, want off where /metrics is published", got)
	}
	if flagValue(c.Args, "max-conns") == "" {
		t.Error("-max-conns not set: the default follows the container's RLIMIT_NOFILE, not its memory limit")
	}
	if len(c.Command) != 1 || c.Command[0] != "/echo-server" {
		t.Errorf("command %v, want [/echo-server]", c.Command)
	}
}

// TestGracePeriodFitsDrain: terminationGracePeriodSeconds covers the
// preStop sleep, -drain-delay and -shutdown-timeout, with a margin.
func TestGracePeriodFitsDrain(t *testing.T) {
	b := load(t)
	pod := b.deploy.Spec.Template.Spec
	c := pod.Containers[0]
	if c.Lifecycle == nil || c.Lifecycle.PreStop == nil || c.Lifecycle.PreStop.Sleep == nil || c.Lifecycle.PreStop.Sleep.Seconds <= 0 {
		t.Fatalf("preStop must sleep (endpoints drop the pod meanwhile): %+v", c.Lifecycle)
	}
	dur := func(name, def string) time.Duration {
		v := flagValue(c.Args, name)
		if v == "" {
			v = def
		}
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("-%s %q: %v", name, v, err)
		}
		return d
	}
	need := time.Duration(c.Lifecycle.PreStop.Sleep.Seconds)*time.Second + dur("drain-delay", "0s") + dur("shutdown-timeout", "5s")
	if pod.TerminationGracePeriodSeconds == nil {
		t.Fatal("terminationGracePeriodSeconds unset")
	}
	grace := time.Duration(*pod.TerminationGracePeriodSeconds) * time.Second
	if grace < need+2*time.Second {
		t.Errorf("terminationGracePeriodSeconds %v < preStop + drain + shutdown %v + 2 s margin", grace, need)
	}
}

// TestSeccompInstaller: the DaemonSet writes the profile where the
// Deployment's localhostProfile points (relative to the kubelet's
// /var/lib/kubelet/seccomp), from the generated ConfigMap.
func TestSeccompInstaller(t *testing.T) {
	b := load(t)
	pod := b.ds.Spec.Template.Spec
	var hostDir, cmName string
	for _, v := range pod.Volumes {
		if v.HostPath != nil {
			hostDir = v.HostPath.Path
		}
		if v.ConfigMap != nil {
			cmName = v.ConfigMap.Name
		}
	}
	if hostDir != "/var/lib/kubelet/seccomp" {
		t.Errorf("hostPath %q, want the kubelet's seccomp root /var/lib/kubelet/seccomp", hostDir)
	}
	if !slices.ContainsFunc(b.k.ConfigMapGenerator, func(g struct {
		Name    string   `json:"name"`
		Files   []string `json:"files"`
		Options *struct {
			DisableNameSuffixHash bool              `json:"disableNameSuffixHash"`
			Labels                map[string]string `json:"labels"`
		} `json:"options"`
	}) bool {
		return g.Name == cmName && slices.Contains(g.Files, "seccomp-io_uring.json="+flatProfilePath)
	}) {
		t.Errorf("the DaemonSet's ConfigMap %q is not generated from %s", cmName, flatProfilePath)
	}
	if len(pod.InitContainers) != 1 {
		t.Fatalf("%d init containers, want 1", len(pod.InitContainers))
	}
	ic := pod.InitContainers[0]
	mount := ""
	for _, m := range ic.VolumeMounts {
		if m.Name == "host-seccomp" {
			mount = m.MountPath
		}
	}
	profile := *b.deploy.Spec.Template.Spec.SecurityContext.SeccompProfile.LocalhostProfile
	script := strings.Join(ic.Command, " ")
	if mount == "" || !strings.Contains(script, filepath.Join(mount, profile)) {
		t.Errorf("the init container does not write %s under %s: %q", profile, mount, script)
	}
}

// TestServiceScrapingAndScaling: the Service, ServiceMonitor, annotations,
// PDB and HPA all point at the Deployment's pods and ports.
func TestServiceScrapingAndScaling(t *testing.T) {
	b := load(t)
	podLabels := b.deploy.Spec.Template.Labels
	matches := func(sel map[string]string) bool {
		for k, v := range sel {
			if podLabels[k] != v {
				return false
			}
		}
		return len(sel) > 0
	}
	if !matches(b.deploy.Spec.Selector.MatchLabels) || !matches(b.svc.Spec.Selector) || !matches(b.pdb.Spec.Selector.MatchLabels) {
		t.Error("a selector does not match the Deployment's pod labels")
	}
	ports := map[string]int32{}
	for _, p := range b.deploy.Spec.Template.Spec.Containers[0].Ports {
		ports[p.Name] = p.ContainerPort
	}
	svcPorts := map[string]bool{}
	for _, p := range b.svc.Spec.Ports {
		svcPorts[p.Name] = true
		if _, ok := ports[p.TargetPort.StrVal]; !ok {
			t.Errorf("Service port %s targets %v, not a container port", p.Name, p.TargetPort)
		}
	}
	for _, ep := range b.sm.Spec.Endpoints {
		if !svcPorts[ep.Port] || ep.Path != "/metrics" {
			t.Errorf("ServiceMonitor endpoint %s %s: not the Service's metrics port", ep.Port, ep.Path)
		}
	}
	if !matches(b.sm.Spec.Selector.MatchLabels) && b.sm.Spec.Selector.MatchLabels["app.kubernetes.io/name"] != b.svc.Labels["app.kubernetes.io/name"] {
		t.Error("ServiceMonitor selects no Service")
	}
	for _, ann := range []map[string]string{b.deploy.Spec.Template.Annotations, b.svc.Annotations} {
		if ann["prometheus.io/scrape"] != "true" || ann["prometheus.io/path"] != "/metrics" || ann["prometheus.io/port"] != strconv.Itoa(int(ports["metrics"])) {
			t.Errorf("prometheus.io annotations %v do not point at the metrics port %d", ann, ports["metrics"])
		}
	}
	if b.hpa.Spec.ScaleTargetRef.Kind != "Deployment" || b.hpa.Spec.ScaleTargetRef.Name != b.deploy.Name {
		t.Errorf("HPA targets %+v", b.hpa.Spec.ScaleTargetRef)
	}
	if b.hpa.Spec.MinReplicas == nil || *b.hpa.Spec.MinReplicas < 2 || b.hpa.Spec.MaxReplicas < *b.hpa.Spec.MinReplicas {
		t.Error("HPA must keep at least 2 replicas (the PDB lets one go)")
	}
	if b.pdb.Spec.MaxUnavailable == nil || b.pdb.Spec.MaxUnavailable.IntValue() != 1 {
		t.Errorf("PDB maxUnavailable %v, want 1", b.pdb.Spec.MaxUnavailable)
	}
}

var update = flag.Bool("update", false, "regenerate files/ from ../seccomp-io_uring.json and ../grafana/uringrt.json")

const flatProfilePath = "files/seccomp-io_uring.oci-amd64.json"

// TestFilesInSync: the files kustomize reads are the project's dashboard
// byte for byte, and its seccomp profile flattened for amd64 (make
// k8s-files, i.e. go test -run TestFilesInSync -update, regenerates them).
func TestFilesInSync(t *testing.T) {
	prof, err := os.ReadFile("../seccomp-io_uring.json")
	if err != nil {
		t.Fatal(err)
	}
	flat, err := FlattenProfile(prof, "amd64")
	if err != nil {
		t.Fatal(err)
	}
	dash, err := os.ReadFile("../grafana/uringrt.json")
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string][]byte{flatProfilePath: flat, "files/uringrt.json": dash} {
		if *update {
			if err := os.WriteFile(path, want, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s is stale: run make k8s-files", path)
		}
	}
}

// TestKustomizeBuild renders the base with kubectl kustomize (skipped
// without kubectl, unless REQUIRE_KUBECTL=1) and decodes every rendered
// object strictly, the generated ConfigMaps included.
func TestKustomizeBuild(t *testing.T) {
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		if os.Getenv("REQUIRE_KUBECTL") == "1" {
			t.Fatal("kubectl not on PATH and REQUIRE_KUBECTL=1")
		}
		t.Skip("kubectl not on PATH")
	}
	out, err := exec.Command(kubectl, "kustomize", ".").Output()
	if err != nil {
		t.Fatalf("kubectl kustomize: %v", err)
	}
	byKind := map[string]int{}
	var dsCM string
	cms := map[string]*corev1.ConfigMap{}
	for _, doc := range strings.Split(string(out), "\n---\n") {
		obj, err := decodeStrict([]byte(doc))
		if err != nil {
			t.Fatalf("rendered: %v\n%s", err, doc)
		}
		switch o := obj.(type) {
		case *corev1.ConfigMap:
			byKind["ConfigMap"]++
			cms[o.Name] = o
		case *appsv1.DaemonSet:
			byKind["DaemonSet"]++
			for _, v := range o.Spec.Template.Spec.Volumes {
				if v.ConfigMap != nil {
					dsCM = v.ConfigMap.Name
				}
			}
		case *appsv1.Deployment:
			byKind["Deployment"]++
			if img := o.Spec.Template.Spec.Containers[0].Image; img != "localhost/uringrt-echo:latest" {
				t.Errorf("rendered image %q", img)
			}
		default:
			byKind[fmt.Sprintf("%T", obj)]++
		}
	}
	if byKind["ConfigMap"] != 2 || byKind["DaemonSet"] != 1 || byKind["Deployment"] != 1 || len(byKind) != 7 {
		t.Errorf("rendered objects: %v", byKind)
	}
	cm, ok := cms[dsCM]
	if !ok {
		t.Fatalf("the DaemonSet mounts ConfigMap %q, which the render lacks (have %v)", dsCM, cms)
	}
	prof, _ := os.ReadFile(flatProfilePath)
	if cm.Data["seccomp-io_uring.json"] != string(prof) {
		t.Errorf("the rendered profile ConfigMap is not %s", flatProfilePath)
	}
	dash, ok := cms["uringrt-grafana-dashboard"]
	if !ok || dash.Labels["grafana_dashboard"] != "1" {
		t.Fatalf("no uringrt-grafana-dashboard ConfigMap labelled for the Grafana sidecar")
	}
	want, _ := os.ReadFile("../grafana/uringrt.json")
	if dash.Data["uringrt.json"] != string(want) || !json.Valid([]byte(dash.Data["uringrt.json"])) {
		t.Error("the rendered dashboard ConfigMap is not ../grafana/uringrt.json")
	}
}
