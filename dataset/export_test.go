package dataset

// PackedReads returns how many row groups of packed steps files d has
// decoded and how many packed files it has opened.
func (d *Dataset) PackedReads() (groups, files int) {
	d.groups.mu.Lock()
	defer d.groups.mu.Unlock()
	return d.groups.decoded, d.groups.opened
}
