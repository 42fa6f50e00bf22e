package faults

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/taskrepo/taskrepo/internal/testkit/testdb"
	"github.com/taskrepo/taskrepo/taskapi"
	"github.com/taskrepo/taskrepo/taskpg"
)

const (
	crashTopic   = "crash"
	crashTasks   = 4000
	crashWorkers = 3
	crashKills   = 6
	crashExpiry  = 2 * time.Second
	crashWork    = 100 * time.Millisecond // a batch of 20 works this long: a kill mostly lands mid-batch
	settleWithin = 3 * time.Minute
)

// kill is one crash: the worker killed, when, and the tasks it held.
type kill struct {
	owner   string
	at      time.Time
	held    []int64       // sequences Active under the dead owner right after the kill
	resumed time.Duration // from the kill until every held task succeeded elsewhere
}

// TestCrashedConsumersLoseNothing runs consumer processes over thousands
// of tasks and kills one with SIGKILL, mid-batch, every few hundred
// milliseconds, starting a new one each time. The survivors' keepers
// expire the dead owners' tasks and revive them. In the end every task
// succeeded once: its work committed exactly once, and no dead owner
// completed anything after its death.
func TestCrashedConsumersLoseNothing(t *testing.T) {
	ctx := context.Background()
	url := testdb.PostgresURL(t)
	pool, repo := openFaultDB(t, url, crashTopic)
	pushCrashTasks(t, pool, repo)
	live := map[string]*worker{}
	for i := range crashWorkers {
		w := startWorker(t, url, crashTopic, fmt.Sprintf("worker-%d", i), "-expiry", crashExpiry.String(), "-work", crashWork.String())
		live[w.owner] = w
	}
	var kills []*kill
	for i := range crashKills {
		time.Sleep(time.Duration(300+rand.IntN(500)) * time.Millisecond)
		k := crash(t, pool, repo, live)
		kills = append(kills, k)
		w := startWorker(t, url, crashTopic, fmt.Sprintf("worker-%d", crashWorkers+i), "-expiry", crashExpiry.String(), "-work", crashWork.String())
		live[w.owner] = w
	}
	awaitSettled(t, pool, repo, kills)
	for _, w := range live {
		w.stop(t)
	}
	checkEffects(t, ctx, pool, repo, kills)
	reportResumes(t, kills)
}

func pushCrashTasks(t *testing.T, pool *pgxpool.Pool, repo *taskpg.Repository) {
	creations := make([]taskapi.Creation, crashTasks)
	for i := range creations {
		creations[i] = taskapi.Creation{Identifier: fmt.Sprintf("task-%05d", i)}
	}
	if _, err := repo.Push(context.Background(), pool, crashTopic, taskapi.Append, creations...); err != nil {
		t.Fatal(err)
	}
}

// crash kills a live worker at random and notes what it held.
func crash(t *testing.T, pool *pgxpool.Pool, repo *taskpg.Repository, live map[string]*worker) *kill {
	owners := make([]string, 0, len(live))
	for o := range live {
		owners = append(owners, o)
	}
	slices.Sort(owners)
	victim := live[owners[rand.IntN(len(owners))]]
	victim.kill(t)
	delete(live, victim.owner)
	k := &kill{owner: victim.owner, at: time.Now().UTC()}
	for _, info := range activeTasks(t, pool, repo) {
		if info.Owner == victim.owner {
			k.held = append(k.held, info.Sequence)
		}
	}
	t.Logf("killed %s holding %d tasks", k.owner, len(k.held))
	return k
}

func activeTasks(t *testing.T, pool *pgxpool.Pool, repo *taskpg.Repository) []taskapi.Info {
	infos, err := repo.Page(context.Background(), pool, crashTopic,
		taskapi.Listing{States: []taskapi.State{taskapi.Active}}, taskapi.Inception, crashTasks, taskapi.Forward)
	if err != nil {
		t.Fatal(err)
	}
	return infos
}

// awaitSettled waits until every task succeeded, noting when the tasks of
// each dead owner had succeeded elsewhere.
func awaitSettled(t *testing.T, pool *pgxpool.Pool, repo *taskpg.Repository, kills []*kill) {
	ctx := context.Background()
	deadline := time.Now().Add(settleWithin)
	for {
		for _, k := range kills {
			if k.resumed == 0 && allSucceeded(t, pool, repo, k.held) {
				k.resumed = time.Since(k.at)
			}
		}
		counts, err := repo.Count(ctx, pool, taskapi.Total, taskapi.Counting{Topic: crashTopic}, taskapi.Unbounded)
		if err != nil {
			t.Fatal(err)
		}
		if counts[crashTopic][taskapi.Succeeded].Count == crashTasks {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not every task succeeded within %v: %v", settleWithin, counts[crashTopic])
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func allSucceeded(t *testing.T, pool *pgxpool.Pool, repo *taskpg.Repository, seqs []int64) bool {
	for _, seq := range seqs {
		info, ok, err := repo.Lookup(context.Background(), pool, crashTopic, seq)
		if err != nil || !ok {
			t.Fatalf("look up task %d: %v (found %v)", seq, err, ok)
		}
		if info.State != taskapi.Succeeded {
			return false
		}
	}
	return true
}

// checkEffects checks that every task's work committed exactly once, by
// the owner that completed it, and never by an owner after its death.
func checkEffects(t *testing.T, ctx context.Context, pool *pgxpool.Pool, repo *taskpg.Repository, kills []*kill) {
	var rows, distinct int
	if err := pool.QueryRow(ctx, "SELECT count(*), count(DISTINCT identifier) FROM fault_effect").Scan(&rows, &distinct); err != nil {
		t.Fatal(err)
	}
	if rows != crashTasks || distinct != crashTasks {
		t.Errorf("effects: %d rows of %d identifiers, want %d of %d: some work committed twice or never", rows, distinct, crashTasks, crashTasks)
	}
	counts, err := repo.Count(ctx, pool, taskapi.Total, taskapi.Counting{Topic: crashTopic}, taskapi.Unbounded)
	if err != nil {
		t.Fatal(err)
	}
	if len(counts[crashTopic]) != 1 || counts[crashTopic][taskapi.Succeeded].Count != crashTasks {
		t.Errorf("tasks per state: %v, want %d SUCCEEDED only", counts[crashTopic], crashTasks)
	}
	for _, k := range kills {
		var late int
		err := pool.QueryRow(ctx, "SELECT count(*) FROM fault_effect WHERE owner = $1 AND at > $2", k.owner, k.at).Scan(&late)
		if err != nil {
			t.Fatal(err)
		}
		if late > 0 {
			t.Errorf("%s committed %d effects after it was killed", k.owner, late)
		}
	}
	checkOutputs(t, ctx, pool, repo)
}

// checkOutputs checks that each task was completed by the owner whose
// effect row committed with it.
func checkOutputs(t *testing.T, ctx context.Context, pool *pgxpool.Pool, repo *taskpg.Repository) {
	effectOwner := map[string]string{}
	rows, err := pool.Query(ctx, "SELECT identifier, owner FROM fault_effect")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id, owner string
		if err := rows.Scan(&id, &owner); err != nil {
			t.Fatal(err)
		}
		effectOwner[id] = owner
	}
	infos, err := repo.Page(ctx, pool, crashTopic, taskapi.Listing{}, taskapi.Inception, crashTasks, taskapi.Forward)
	if err != nil {
		t.Fatal(err)
	}
	for _, info := range infos {
		if info.Output != effectOwner[info.Identifier] || info.Owner != info.Output {
			t.Errorf("task %s: completed by %s with output %q, its effect by %q", info.Identifier, info.Owner, info.Output, effectOwner[info.Identifier])
		}
	}
}

// reportResumes logs how long the work of each crashed process took to
// resume elsewhere, and checks that some kill caught a batch mid-way.
func reportResumes(t *testing.T, kills []*kill) {
	var held int
	var resumes []time.Duration
	for _, k := range kills {
		held += len(k.held)
		if len(k.held) > 0 {
			resumes = append(resumes, k.resumed)
		}
	}
	if held == 0 {
		t.Fatal("no kill caught a worker holding tasks: the test proved nothing about mid-batch crashes")
	}
	slices.Sort(resumes)
	t.Logf("%d kills, %d held tasks; work resumed after p50 %v, max %v (expiry %v)",
		len(kills), held, resumes[len(resumes)/2].Round(time.Millisecond), resumes[len(resumes)-1].Round(time.Millisecond), crashExpiry)
}
