package main

import (
	"fmt"

	"github.com/mssqlifi/terraform-provider-mssqlifi/internal/hostsuite"
)

// recorder is the hook for MSSQLIFI_ACC_RECORD.
//
// RECORDING HOOK (issue 17): internal/hostsuite/transcript (helper "replay", branch
// h/replay) owns the transcript format and its redaction. Until that package is
// merged here, MSSQLIFI_ACC_RECORD is refused with a message instead of writing an
// unredacted transcript.
type recorder interface {
	hostsuite.Recorder
	write(dir string) error
}

func newRecorder(cfg hostsuite.Config) (recorder, error) {
	if cfg.RecordDir == "" {
		return nil, nil
	}
	return nil, fmt.Errorf("%s is set, but this build has no transcript recorder yet (internal/hostsuite/transcript): unset it", hostsuite.EnvRecord)
}
