package taskproc

import (
	"context"
	"fmt"
	"sync"
)

// CloseMode says what a Buffered handler does, when its Manager stops, with
// the batches still in its buffer: none is dropped, none settled twice.
type CloseMode int

const (
	// ReleaseOnClose gives buffered batches back as Ready (the default).
	ReleaseOnClose CloseMode = iota
	// FailOnClose fails buffered batches.
	FailOnClose
)

// errClosed is the cause with which FailOnClose fails buffered batches.
var errClosed = fmt.Errorf("taskproc: the buffer closed before a worker took the batch")

// BufferedHandler hands batches to a pool of workers through a bounded
// buffer (see Buffered). It is a Starter: its Manager starts and stops it.
type BufferedHandler struct {
	handler Handler
	size    int
	workers int
	mode    CloseMode

	mu      sync.Mutex
	queue   chan queued
	closing chan struct{}
	running bool
	closed  bool
	sending int           // Handle calls between their check of closed and their send
	quiet   chan struct{} // closed when sending drops to zero after closing
	wg      sync.WaitGroup
}

// queued is a batch in the buffer, with the context it was polled with.
type queued struct {
	ctx   context.Context
	batch *Batch
}

// Buffered returns a handler that puts each batch into a buffer of size
// batches, read by workers goroutines that pass them to handler. The poll
// loop blocks only while the buffer is full, so that a worker never waits
// for a poll's round trip; while polls come back full and the workers
// wait for them, a second loop polls beside it, so that two polls are in
// flight, and each loop may hold one batch waiting for room; the batch's context, with the values of the
// context the runtime was started with, reaches the worker. When the
// Manager stops, batches still in the buffer are released or failed, as
// mode says. A BufferedHandler serves one Manager. size below zero is zero,
// workers below one is one.
func Buffered(size, workers int, handler Handler, mode CloseMode) *BufferedHandler {
	return &BufferedHandler{handler: handler, size: max(size, 0), workers: max(workers, 1), mode: mode}
}

// holds says that each worker holds what its handler holds.
func (h *BufferedHandler) holds() (int, string) {
	n, what := holdsOf(h.handler)
	return n * h.workers, "Buffered " + what
}

// Depth returns how many batches wait in the buffer.
func (h *BufferedHandler) Depth() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.queue)
}

// Start starts the workers; ErrRunning if they run already.
func (h *BufferedHandler) Start(context.Context) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.running {
		return ErrRunning
	}
	h.running, h.closed, h.sending = true, false, 0
	h.queue, h.closing, h.quiet = make(chan queued, h.size), make(chan struct{}), make(chan struct{})
	for range h.workers {
		h.wg.Go(func() { h.work(h.queue, h.closing) })
	}
	return nil
}

// Handle puts b into the buffer, waiting while it is full. Once the buffer
// closed, b is released or failed at once, as the close mode says.
func (h *BufferedHandler) Handle(ctx context.Context, b *Batch) error {
	h.mu.Lock()
	if !h.running || h.closed {
		h.mu.Unlock()
		return h.settleClosed(b)
	}
	h.sending++
	queue, closing := h.queue, h.closing
	h.mu.Unlock()
	defer h.sent()
	select {
	case queue <- queued{ctx: ctx, batch: b}:
		return nil
	case <-closing:
		return h.settleClosed(b)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// sent counts a Handle call out of sending.
func (h *BufferedHandler) sent() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.sending--; h.sending == 0 && h.closed {
		close(h.quiet)
	}
}

// Stop closes the buffer, settles the batches left in it as the close mode
// says, and waits for the workers to finish their batches, or for ctx.
func (h *BufferedHandler) Stop(ctx context.Context) error {
	h.mu.Lock()
	if !h.running || h.closed {
		h.mu.Unlock()
		return nil
	}
	h.closed = true
	close(h.closing)
	if h.sending == 0 {
		close(h.quiet)
	}
	queue, quiet := h.queue, h.quiet
	h.mu.Unlock()
	<-quiet // every Handle has sent, or has seen the closing
	for drained := false; !drained; {
		select {
		case q := <-queue:
			_ = h.settleClosed(q.batch)
		default:
			drained = true
		}
	}
	done := make(chan struct{})
	go func() { h.wg.Wait(); close(done) }()
	defer func() {
		h.mu.Lock()
		h.running = false
		h.mu.Unlock()
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// work passes batches from queue to the handler until closing.
func (h *BufferedHandler) work(queue chan queued, closing chan struct{}) {
	for {
		select {
		case <-closing:
			return
		default:
		}
		select {
		case <-closing:
			return
		case q := <-queue:
			runHandler(h.handler, q.ctx, q.batch)
		}
	}
}

// settleClosed settles a batch that the closed buffer did not take.
func (h *BufferedHandler) settleClosed(b *Batch) error {
	if h.mode == FailOnClose {
		return b.Fail(errClosed)
	}
	return b.Release()
}
