package published

import (
	"fmt"
	"strings"

	"github.com/rlrec/rlrec/internal/hive"
	"github.com/rlrec/rlrec/internal/runid"
	"github.com/rlrec/rlrec/internal/store"
	"github.com/rlrec/rlrec/schema"
)

// Held is what a ROOT's published files prove it holds of a recording's
// producer stream: its content chain (rlrec.content_chain, the longest one
// among its sessions, logs and telemetry files) and its run nonce
// (rlrec.run_nonce).
type Held struct {
	// Files is the number of the recording's published files in every
	// table; 0: the ROOT holds nothing of it.
	Files int
	// Chain is the longest content chain its files record, zero when none
	// records one (the recording came unnumbered or from an rlrec that
	// kept none).
	Chain runid.Chain
	// ChainFile is the file Chain was read from.
	ChainFile string
	// Nonce is its run nonce, nil when its files record none.
	Nonce []byte
}

// HeldOf reads what the ROOT st holds of the recording rec. An error names
// a file that could not be read or whose chain or nonce is malformed, or
// two files that name different runs.
func HeldOf(st store.Root, rec hive.Recording) (Held, error) {
	var h Held
	for _, t := range hive.Tables {
		parts, err := st.Parts(hive.RecordingPartition(t.Name, rec).Rel())
		if err != nil {
			return h, fmt.Errorf("published: what ROOT holds of %s: %w", rec, err)
		}
		h.Files += len(parts)
	}
	var nonceText, nonceFile string
	for _, table := range sequenceTables {
		parts, err := st.Parts(hive.RecordingPartition(table, rec).Rel())
		if err != nil {
			return h, fmt.Errorf("published: what ROOT holds of %s: %w", rec, err)
		}
		for _, p := range parts {
			v, ok, err := readKeyValue(st, p, schema.MetaContentChain)
			if err != nil {
				return h, fmt.Errorf("published: what ROOT holds of %s: %w", rec, err)
			}
			if ok {
				c, err := runid.ParseChain(v)
				if err != nil {
					return h, fmt.Errorf("published: %s: %s: %w", st.Path(p.Rel), schema.MetaContentChain, err)
				}
				if c.Events > h.Chain.Events {
					h.Chain, h.ChainFile = c, st.Path(p.Rel)
				}
			}
			v, ok, err = readKeyValue(st, p, schema.MetaRunNonce)
			if err != nil {
				return h, fmt.Errorf("published: what ROOT holds of %s: %w", rec, err)
			}
			if !ok {
				continue
			}
			if nonceText != "" && v != nonceText {
				return h, fmt.Errorf("published: run nonce of %s: %s names %s, %s names %s", rec, nonceFile, nonceText, st.Path(p.Rel), v)
			}
			nonceText, nonceFile = v, st.Path(p.Rel)
		}
	}
	if nonceText != "" {
		n, err := runid.Parse(strings.TrimSpace(nonceText))
		if err != nil {
			return h, fmt.Errorf("published: %s has %s %q: %w", nonceFile, schema.MetaRunNonce, nonceText, err)
		}
		h.Nonce = n
	}
	return h, nil
}
