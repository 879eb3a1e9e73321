# tflint (make tflint) on every module under examples/: the terraform ruleset that is
# bundled in the tflint binary, so nothing is downloaded (no source, no version, and
# make tflint never runs tflint --init). "recommended": the rules that catch mistakes
# (deprecated syntax, unused declarations, missing version constraints).
config {
  call_module_type = "local"
}

plugin "terraform" {
  enabled = true
  preset  = "recommended"
}
