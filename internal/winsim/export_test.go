package winsim

// What the tests of package winsim_test read of the package's own lists.

// ControlPatterns are the control plane's endpoints, as it registers them.
func ControlPatterns() []string {
	var out []string
	for _, r := range (&Sim{}).controlRoutes() {
		out = append(out, r.pattern)
	}
	return out
}

// ActionNames and ClusterActionNames are the actions the control plane applies.
var (
	ActionNames        = actionNames
	ClusterActionNames = clusterActionNames
)
