package tds

import (
	"bytes"
	"testing"
	"time"
)

func TestEncodeDateTimeOffset(t *testing.T) {
	for _, tc := range []struct {
		name  string
		tm    time.Time
		scale int
		want  []byte
	}{
		{"scale 0 truncates", time.Date(2000, 1, 1, 0, 0, 1, 999999999, time.UTC), 0,
			[]byte{1, 0, 0, 0x07, 0x24, 0x0B, 0, 0}},
		{"scale 7, offset stored in minutes, time and date in UTC",
			time.Date(2000, 1, 1, 1, 0, 0, 100, time.FixedZone("", 2*3600)), 7,
			// 23:00:00.0000001 UTC on 1999-12-31 = 828000000001 ticks of 100 ns
			[]byte{0x01, 0x58, 0xA5, 0xC8, 0xC0, 0x06, 0x24, 0x0B, 120, 0}},
		{"scale 3 uses 4 bytes, minimum date", time.Date(1, 1, 1, 0, 0, 0, 5e6, time.FixedZone("", 0)), 3,
			[]byte{5, 0, 0, 0, 0, 0, 0, 0, 0}},
	} {
		got, err := encodeDateTimeOffset(tc.tm, tc.scale)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if !bytes.Equal(got, tc.want) {
			t.Errorf("%s: got % X, want % X", tc.name, got, tc.want)
		}
	}
	if _, err := encodeDateTimeOffset(time.Date(2000, 1, 1, 0, 0, 0, 0, time.FixedZone("", 30)), 7); err == nil {
		t.Error("an offset of 30 seconds was accepted; datetimeoffset holds whole minutes")
	}
}
