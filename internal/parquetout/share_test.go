package parquetout

import "testing"

func TestFileSharePageClass(t *testing.T) {
	for _, tc := range []struct {
		name      string
		share     int64
		open      int64
		wantPage  int
		wantGroup int64 // RowGroupBytes(32 MiB) with open files
	}{
		{"first file of a 256 MiB budget", 16 << 20, 0, 256 << 10, 8 << 20},
		{"one open already", 16 << 20, 1, 256 << 10, 8 << 20},
		{"eight open", 16 << 20, 8, 64 << 10, 1 << 20},
		{"32 open", 16 << 20, 32, 16 << 10, minRowGroupBytes},
		{"256 open", 16 << 20, 256, 4 << 10, minRowGroupBytes},
		{"small budget", 1 << 20, 0, 16 << 10, minRowGroupBytes},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := NewFileShare(tc.share)
			for range tc.open {
				s.Opened()
			}
			c := s.PageClass()
			if got := PageClassConfig(Config{}, c).PageBufferSize; got != tc.wantPage {
				t.Errorf("page size %d, want %d", got, tc.wantPage)
			}
			if got := s.RowGroupBytes(32 << 20); got != tc.wantGroup {
				t.Errorf("row group bound %d, want %d", got, tc.wantGroup)
			}
		})
	}
}
