package recorder

import "sync"

// pool runs jobs on a fixed number of goroutines. Jobs submitted to one
// serial queue run one at a time in submission order; different queues run
// in parallel. The Parquet files of one episode are written through one
// queue, so its streamed row groups stay in order, while different
// episodes are finalised on both cores.
type pool struct {
	ready   chan *serial
	wg      sync.WaitGroup // running workers
	pending sync.WaitGroup // submitted jobs not yet finished
}

// serial is a queue of jobs that run one after another.
type serial struct {
	mu      sync.Mutex
	jobs    []func()
	running bool
}

func newPool(workers int) *pool {
	p := &pool{ready: make(chan *serial, 1024)}
	for range workers {
		p.wg.Add(1)
		go p.work()
	}
	return p
}

// submit queues job on q. It blocks only when every worker is busy and the
// ready list is full, which is back-pressure on the caller.
func (p *pool) submit(q *serial, job func()) {
	p.pending.Add(1)
	q.mu.Lock()
	q.jobs = append(q.jobs, job)
	start := !q.running
	q.running = true
	q.mu.Unlock()
	if start {
		p.ready <- q
	}
}

func (p *pool) work() {
	defer p.wg.Done()
	for q := range p.ready {
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
			p.pending.Done()
		}
	}
}

// wait returns once every submitted job has finished.
func (p *pool) wait() { p.pending.Wait() }

// stop waits for every job and ends the workers.
func (p *pool) stop() {
	p.pending.Wait()
	close(p.ready)
	p.wg.Wait()
}
