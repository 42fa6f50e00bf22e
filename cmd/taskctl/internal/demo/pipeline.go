package demo

import (
	"context"
	"errors"
	"fmt"

	"github.com/taskrepo/taskrepo/taskapi"
	"github.com/taskrepo/taskrepo/taskproc"
)

// pipeline returns the handler of demo.pipeline, a composite of four
// steps: validate the whole batch; then price and stock each task, side by
// side; then ship what is still in play. A task's result is the worst any
// step gave it, and the outputs of the steps are joined.
func (r *demoRun[Tx]) pipeline() (taskproc.Handler, error) {
	return taskproc.NewComposite[Tx](taskproc.WithConcurrency(4)).
		Step("validate", r.validate).
		Each("price", demoPriceItem, "validate").
		Each("stock", demoStockItem, "validate").
		Step("ship", demoShipItems, "price", "stock").
		Handler()
}

// validate fails the orders of no quantity (one in twenty-five).
func (r *demoRun[Tx]) validate(_ context.Context, tasks []taskapi.Task, _ *taskproc.Supplement) (taskproc.Outcomes, error) {
	out := taskproc.Outcomes{}
	for _, task := range tasks {
		r.rec.started(demoPipeline, task)
		if parseDemoInput(task).Qty == 0 {
			out[task] = taskproc.Outcome{Decision: taskapi.Decision{Result: taskapi.Failure, Output: "quantity must be positive"}}
			continue
		}
		out[task] = taskproc.Outcome{Decision: taskapi.Decision{Result: taskapi.Success, Output: "valid"}}
	}
	return out, nil
}

// demoPriceItem prices one item.
func demoPriceItem(_ context.Context, task taskapi.Task, _ *taskproc.Supplement) (taskproc.Outcome, error) {
	in := parseDemoInput(task)
	return taskproc.Outcome{Decision: taskapi.Decision{Result: taskapi.Success, Output: fmt.Sprintf("priced %d x %s", in.Qty, in.SKU)}}, nil
}

// demoStockItem reserves one item; one in twelve is back-ordered and waits
// (SUSPENSION), and ship never sees it.
func demoStockItem(_ context.Context, task taskapi.Task, _ *taskproc.Supplement) (taskproc.Outcome, error) {
	if parseDemoInput(task).N%12 == 5 {
		return taskproc.Outcome{}, taskproc.EndWith(taskapi.Suspension, errors.New("back-ordered"))
	}
	return taskproc.Outcome{Decision: taskapi.Decision{Result: taskapi.Success, Output: "reserved"}}, nil
}

// demoShipItems ships the items still in play at once; digital goods (one in
// ten) have nothing to ship and are filtered out.
func demoShipItems(_ context.Context, tasks []taskapi.Task, _ *taskproc.Supplement) (taskproc.Outcomes, error) {
	out := taskproc.Outcomes{}
	for _, task := range tasks {
		if parseDemoInput(task).N%10 == 3 {
			out[task] = taskproc.Outcome{Decision: taskapi.Decision{Result: taskapi.Filter, Output: "digital goods: nothing to ship"}}
			continue
		}
		out[task] = taskproc.Outcome{Decision: taskapi.Decision{Result: taskapi.Success, Output: "shipped"}}
	}
	return out, nil
}
