package parquetout

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/rlrec/rlrec/internal/vfs"
	"github.com/rlrec/rlrec/schema"
	"github.com/rlrec/rlrec/schema/spacesv1"
)

func sBox(dt spacesv1.DataType, shape ...int64) *spacesv1.SpaceSpec {
	return &spacesv1.SpaceSpec{Shape: shape, Dtype: dt, Spec: &spacesv1.SpaceSpec_Box{Box: &spacesv1.BoxSpec{}}}
}

func sDiscrete(dt spacesv1.DataType, n int64) *spacesv1.SpaceSpec {
	return &spacesv1.SpaceSpec{Dtype: dt, Spec: &spacesv1.SpaceSpec_Discrete{Discrete: &spacesv1.DiscreteSpec{N: n}}}
}

func sMultiDiscrete(dt spacesv1.DataType, nvec ...int64) *spacesv1.SpaceSpec {
	return &spacesv1.SpaceSpec{Dtype: dt, Spec: &spacesv1.SpaceSpec_MultiDiscrete{MultiDiscrete: &spacesv1.MultiDiscreteSpec{Nvec: nvec}}}
}

func sMultiBinary(shape ...int64) *spacesv1.SpaceSpec {
	return &spacesv1.SpaceSpec{Shape: shape, Spec: &spacesv1.SpaceSpec_MultiBinary{MultiBinary: &spacesv1.MultiBinarySpec{}}}
}

func sText() *spacesv1.SpaceSpec {
	return &spacesv1.SpaceSpec{Spec: &spacesv1.SpaceSpec_Text{Text: &spacesv1.TextSpec{MaxLength: 64}}}
}

func sDict(keys []string, spaces ...*spacesv1.SpaceSpec) *spacesv1.SpaceSpec {
	return &spacesv1.SpaceSpec{Spec: &spacesv1.SpaceSpec_Dict{Dict: &spacesv1.DictSpec{Keys: keys, Spaces: spaces}}}
}

func sTuple(spaces ...*spacesv1.SpaceSpec) *spacesv1.SpaceSpec {
	return &spacesv1.SpaceSpec{Spec: &spacesv1.SpaceSpec_Tuple{Tuple: &spacesv1.TupleSpec{Spaces: spaces}}}
}

const (
	dtBool = spacesv1.DataType_DATA_TYPE_BOOL
	dtU8   = spacesv1.DataType_DATA_TYPE_UINT8
	dtU16  = spacesv1.DataType_DATA_TYPE_UINT16
	dtU32  = spacesv1.DataType_DATA_TYPE_UINT32
	dtU64  = spacesv1.DataType_DATA_TYPE_UINT64
	dtI8   = spacesv1.DataType_DATA_TYPE_INT8
	dtI16  = spacesv1.DataType_DATA_TYPE_INT16
	dtI32  = spacesv1.DataType_DATA_TYPE_INT32
	dtI64  = spacesv1.DataType_DATA_TYPE_INT64
	dtF16  = spacesv1.DataType_DATA_TYPE_FLOAT16
	dtF32  = spacesv1.DataType_DATA_TYPE_FLOAT32
	dtF64  = spacesv1.DataType_DATA_TYPE_FLOAT64
)

func mustCompile(t testing.TB, spec *spacesv1.SpaceSpec) *schema.Layout {
	t.Helper()
	l, err := schema.Compile(spec)
	if err != nil {
		t.Fatalf("compile %v: %v", spec, err)
	}
	return l
}

func f32s(xs ...float32) []byte {
	b := make([]byte, 4*len(xs))
	for i, x := range xs {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

func i64le(x int64) []byte { return binary.LittleEndian.AppendUint64(nil, uint64(x)) }

// openParquet opens a committed file through the OS.
func openParquet(t testing.TB, path string) *parquet.File {
	t.Helper()
	return openMem(t, vfs.OS(), path)
}

// readRows returns every row of a file as per-column value lists.
func readRows(t testing.TB, pf *parquet.File) [][][]parquet.Value {
	t.Helper()
	r := parquet.NewReader(pf)
	defer r.Close()
	var out [][][]parquet.Value
	buf := make([]parquet.Row, 16)
	for {
		n, err := r.ReadRows(buf)
		for _, row := range buf[:n] {
			cols := make([][]parquet.Value, len(pf.Schema().Columns()))
			row.Range(func(i int, vs []parquet.Value) bool {
				for _, v := range vs {
					cols[i] = append(cols[i], v.Clone())
				}
				return true
			})
			out = append(out, cols)
		}
		if err != nil {
			break
		}
	}
	if int64(len(out)) != pf.NumRows() {
		t.Fatalf("read %d rows, file has %d", len(out), pf.NumRows())
	}
	return out
}

// osFS returns the OS file system and a root under a temp directory;
// when the test ends, every Parquet file under root must have a valid
// footer.
func osFS(t testing.TB) (vfs.FS, string) {
	t.Helper()
	fsys, root := vfs.OS(), filepath.Join(t.TempDir(), "root")
	t.Cleanup(func() {
		if err := checkFooters(fsys, root); err != nil {
			t.Error(err)
		}
	})
	return fsys, root
}

// checkFooters runs CheckFooter on every *.parquet file under root on
// fsys (temp files, named .tmp, are not checked) and returns nil, or every
// problem found joined (errors.Join), each naming its file. A missing root
// has no files.
func checkFooters(fsys vfs.FS, root string) error {
	var errs []error
	var walk func(dir string)
	walk = func(dir string) {
		ents, err := fsys.ReadDir(dir)
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) || dir != root {
				errs = append(errs, fmt.Errorf("parquetout: list %s: %w", dir, err))
			}
			return
		}
		for _, e := range ents {
			p := filepath.Join(dir, e.Name())
			switch {
			case e.IsDir():
				walk(p)
			case strings.HasSuffix(e.Name(), ".parquet"):
				if err := checkFooterOf(fsys, p); err != nil {
					errs = append(errs, err)
				}
			}
		}
	}
	walk(root)
	return errors.Join(errs...)
}

func checkFooterOf(fsys vfs.FS, path string) error {
	f, err := fsys.Open(path)
	if err != nil {
		return fmt.Errorf("parquetout: open %s: %w", path, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("parquetout: stat %s: %w", path, err)
	}
	if err := CheckFooter(f, st.Size()); err != nil {
		return fmt.Errorf("parquetout: check %s: %w", path, err)
	}
	return nil
}
