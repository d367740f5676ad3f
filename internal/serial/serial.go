// Package serial runs jobs on a fixed pool of goroutines: jobs submitted to
// one Queue run one at a time, in submission order; different queues run
// in parallel. The recorder writes each episode's Parquet files through
// its own queue, so that its streamed row groups stay in order, while
// different episodes are written on every core.
//
// Submit never blocks: the queues ready to run are an unbounded list, so a
// caller bounds the work in flight by other means (the recorder by the
// bytes of rows in flight; a bounded channel made its hooks wait on the
// disk while its memory budget was far from full). Wait may be called
// while jobs are still being submitted (a delayed flush from a timer), and
// returns at a moment no job is pending.
//
//	p := serial.NewPool(2)
//	var q serial.Queue
//	p.Submit(&q, first)
//	p.Submit(&q, second) // after first
//	p.Wait()
//	p.Stop()
package serial

import "sync"

// Pool runs jobs on a fixed number of goroutines; its zero value is not
// usable (NewPool).
type Pool struct {
	mu      sync.Mutex
	cond    sync.Cond
	ready   []*Queue // queues with jobs, not running
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

// Queue is a queue of jobs that run one after another; its zero value is
// an empty queue. Submit it to one Pool only.
type Queue struct {
	mu      sync.Mutex
	jobs    []func()
	running bool
}

// NewPool starts a pool of workers goroutines.
func NewPool(workers int) *Pool {
	p := &Pool{}
	p.cond.L = &p.mu
	for range workers {
		p.wg.Add(1)
		go p.work()
	}
	return p
}

// Submit queues job on q; it never blocks.
func (p *Pool) Submit(q *Queue, job func()) {
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
func (p *Pool) next() *Queue {
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

func (p *Pool) work() {
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

// Wait returns once every submitted job has finished; jobs may be
// submitted meanwhile.
func (p *Pool) Wait() { p.pending.wait() }

// Stop waits for every job and ends the workers. No job may be submitted
// after it.
func (p *Pool) Stop() {
	p.pending.wait()
	p.mu.Lock()
	p.stopped = true
	p.mu.Unlock()
	p.cond.Broadcast()
	p.wg.Wait()
}
