package recorder

import "sync"

// pool runs jobs on a fixed number of goroutines. Jobs submitted to one
// serial queue run one at a time in submission order; different queues run
// in parallel. The Parquet files of one episode are written through one
// queue, so its streamed row groups stay in order, while different
// episodes are finalised on both cores.
//
// submit never blocks: the queues ready to run are an unbounded list, so a
// writer slower than the driver holds the pipeline back only through the
// byte budget of the rows in flight (writer.rows), never through a count
// of queued episodes (a bounded channel made hooks wait on the disk while
// the memory budget was far from full).
type pool struct {
	mu      sync.Mutex
	cond    sync.Cond
	ready   []*serial // queues with jobs, not running
	stopped bool
	wg      sync.WaitGroup // running workers
	pending counter        // submitted jobs not yet finished
}

// counter counts jobs in flight. Unlike a sync.WaitGroup it may be added
// to while another goroutine waits for zero (a batch's delayed flush
// submits from a timer while Flush waits), and wait returns at a moment
// the count is zero.
type counter struct {
	mu   sync.Mutex
	n    int
	zero *sync.Cond
}

func (c *counter) add(d int) {
	c.mu.Lock()
	if c.zero == nil {
		c.zero = sync.NewCond(&c.mu)
	}
	c.n += d
	if c.n == 0 {
		c.zero.Broadcast()
	}
	c.mu.Unlock()
}

func (c *counter) wait() {
	c.mu.Lock()
	if c.zero == nil {
		c.zero = sync.NewCond(&c.mu)
	}
	for c.n > 0 {
		c.zero.Wait()
	}
	c.mu.Unlock()
}

// serial is a queue of jobs that run one after another.
type serial struct {
	mu      sync.Mutex
	jobs    []func()
	running bool
}

func newPool(workers int) *pool {
	p := &pool{}
	p.cond.L = &p.mu
	for range workers {
		p.wg.Add(1)
		go p.work()
	}
	return p
}

// submit queues job on q; it does not block.
func (p *pool) submit(q *serial, job func()) {
	p.pending.add(1)
	q.mu.Lock()
	q.jobs = append(q.jobs, job)
	start := !q.running
	q.running = true
	q.mu.Unlock()
	if start {
		p.mu.Lock()
		p.ready = append(p.ready, q)
		p.mu.Unlock()
		p.cond.Signal()
	}
}

// next returns the next queue to run, or nil once the pool is stopped and
// nothing is ready.
func (p *pool) next() *serial {
	p.mu.Lock()
	defer p.mu.Unlock()
	for len(p.ready) == 0 {
		if p.stopped {
			return nil
		}
		p.cond.Wait()
	}
	q := p.ready[0]
	p.ready[0] = nil
	p.ready = p.ready[1:]
	return q
}

func (p *pool) work() {
	defer p.wg.Done()
	for q := p.next(); q != nil; q = p.next() {
		for {
			q.mu.Lock()
			if len(q.jobs) == 0 {
				q.running = false
				q.mu.Unlock()
				break
			}
			job := q.jobs[0]
			q.jobs[0] = nil
			q.jobs = q.jobs[1:]
			q.mu.Unlock()
			job()
			p.pending.add(-1)
		}
	}
}

// wait returns once every submitted job has finished.
func (p *pool) wait() { p.pending.wait() }

// stop waits for every job and ends the workers.
func (p *pool) stop() {
	p.pending.wait()
	p.mu.Lock()
	p.stopped = true
	p.mu.Unlock()
	p.cond.Broadcast()
	p.wg.Wait()
}
