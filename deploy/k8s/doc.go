// Package k8s holds uringrt's Kubernetes base (kustomize: kustomization.yaml
// and the manifests beside it) and, in its tests only, the check that every
// manifest decodes strictly into the typed k8s.io/api objects (an unknown
// or misspelt field is an error) and keeps the security settings the
// echo-server relies on. It is a module of its own so that the runtime's
// go.mod does not carry the Kubernetes API. See ../README.md.
package k8s
