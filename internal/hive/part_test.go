package hive

import "testing"

func TestParsePartName(t *testing.T) {
	tests := []struct {
		name     string
		n        int
		temp, ok bool
	}{
		{"part-00000.parquet", 0, false, true},
		{"part-00042.parquet", 42, false, true},
		{"part-123456.parquet", 123456, false, true},
		{".part-00007.parquet.tmp", 7, true, true},
		{"part-0001.parquet", 0, false, false},
		{"part-0000a.parquet", 0, false, false},
		{"part--0001.parquet", 0, false, false},
		{"part-00001.parquet.tmp", 0, false, false},
		{".part-00001.parquet", 0, false, false},
		{"data.parquet", 0, false, false},
		{"_SUCCESS", 0, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n, temp, ok := ParsePartName(tt.name)
			if n != tt.n || temp != tt.temp || ok != tt.ok {
				t.Fatalf("ParsePartName(%q) = %d, %v, %v; want %d, %v, %v", tt.name, n, temp, ok, tt.n, tt.temp, tt.ok)
			}
		})
	}
	if PartName(3) != "part-00003.parquet" || TempName(3) != ".part-00003.parquet.tmp" {
		t.Fatalf("names %q %q", PartName(3), TempName(3))
	}
}
