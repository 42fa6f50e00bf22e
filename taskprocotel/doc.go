// Package taskprocotel exports the consumer runtime of taskrepo (package
// taskproc) to OpenTelemetry metrics. It is a Go module of its own, so that
// OpenTelemetry never enters the dependencies of module taskrepo.
//
// A Recorder records the runtime's events; RegisterGauges reads, at every
// collection, what is in flight and what waits in each topic of a Client:
//
//	meter := otel.GetMeterProvider().Meter("github.com/taskrepo/taskrepo/taskprocotel")
//	recorder, err := taskprocotel.NewRecorder(meter)
//	if err != nil {
//		return err
//	}
//	client, err := taskproc.New(repo, taskpg.Transact(pool), taskproc.WithObserver(recorder))
//	if err != nil {
//		return err
//	}
//	client.Handle("invoices", taskproc.Sequential(sendInvoice))
//	reg, err := taskprocotel.RegisterGauges(meter, client)
//	if err != nil {
//		return err
//	}
//	defer reg.Unregister()
//	client.Start(ctx)
//
// taskproc.WithObserver takes one observer; Tee combines the Recorder with
// observers of your own.
//
// # Metrics
//
// From the Recorder, with the attribute topic (the batch's topic; none for
// heartbeats):
//
//	name                         unit         what
//	taskproc.tasks.polled        {task}       tasks polled
//	taskproc.tasks.completed     {task}       tasks completed with the handler's decisions;
//	                                          attribute result: FAILURE, SUSPENSION, FILTER, SUCCESS
//	taskproc.tasks.failed        {task}       tasks failed with their batch (Failure written)
//	taskproc.tasks.released      {task}       tasks given back to Ready unprocessed (a stop, Batch.Release)
//	taskproc.batches.failed      {batch}      batches failed (also when their Failure could not be written)
//	taskproc.polls.failed        {poll}       polls that failed
//	taskproc.loops.died          {loop}       poll loops that died (taskproc.EventFatal)
//	taskproc.heartbeats.failed   {heartbeat}  heartbeats of a Client that failed, without attributes
//	taskproc.owner.fenced        {fencing}    times the owner fenced itself (heartbeat unconfirmed
//	                                          past the expiry), without attributes
//	taskproc.owner.recovered     {recovery}   times the runtime went on under a successor owner
//	taskproc.tasks.abandoned     {task}       tasks a fenced owner gave up without a write
//	taskproc.maintenance.failed  {run}        expiries, revivals and purges of the keeper that failed
//	taskproc.reconcile.failed    {run}        readings of the stored activations that failed
//	taskproc.notifier.lost       {error}      errors of the Notifier (it reconnects), without attributes
//	taskproc.activation.changes  {change}     activation changes applied; attribute activation:
//	                                          RUNNING, PAUSED, DRAINING
//	taskproc.leadership.acquired {term}       terms of exclusive consumption this process began
//	taskproc.leadership.conceded {term}       terms it ended or lost
//	taskproc.settlements.retried {attempt}    settlement writes that failed for the database and
//	                                          were tried again (taskproc.EventSettleRetried)
//	taskproc.batches.lost        {batch}      batches whose every task another owner took before
//	                                          their settlement was written (taskproc.EventLost)
//	taskproc.tasks.rescued       {task}       expired tasks this process's keeper revived
//	taskproc.tasks.poisoned      {task}       expired tasks it ended with Failure instead, rescued
//	                                          too often (taskproc.WithRescues)
//	taskproc.pushes.refused      {push}       pushes of the runtime (follow-ups, periodic tasks)
//	                                          that a topic's capacity refused; topic: the full one
//	taskproc.polls.limited       {poll}       polls that the topic's limits across the fleet held back
//	                                          (taskproc.EventLimited)
//	taskproc.tasks.cancelled     {task}       tasks cancelled while this process ran them
//	                                          (taskproc.EventCancelled)
//	taskproc.batch.duration      s            histogram of the time from a batch's poll to its
//	                                          settlement (completed, failed or released), with the
//	                                          buckets of taskproc.RunBounds (BucketBoundaries)
//
// The counters are monotonic sums; a series appears with its first event.
// The histogram's bucket boundaries are advice that a View may override.
//
// From RegisterGauges, gauges with the attribute topic:
//
//	name                          unit     what
//	taskproc.batches.in_flight    {batch}  batches polled and not settled yet
//	taskproc.ready.depth          {task}   tasks Ready in the topic (a database query)
//	taskproc.ready.oldest_age     s        age of the oldest Ready task, 0 when none (same query)
//
// The taskproc.ready.* gauges run taskproc.Manager.Gauge for every topic at
// every collection: the reader's collection interval is how often those
// queries run, and WithGaugeTimeout bounds each of them.
package taskprocotel
