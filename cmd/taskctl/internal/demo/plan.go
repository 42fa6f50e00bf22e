package demo

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/taskrepo/taskrepo/taskapi"
)

// The demo's topics. The demo destroys and re-initializes them at its
// start, and leaves them behind for the operator commands.
const (
	demoOrders   = "demo.orders"
	demoPrices   = "demo.prices"
	demoPipeline = "demo.pipeline"
	demoRetries  = "demo.retries"
	demoLater    = "demo.later"
	demoPaused   = "demo.paused"
)

// demoTopic is one of the demo's topics: its share of the tasks, in
// percent, and what it shows.
type demoTopic struct {
	name  string
	share int
	shows string
}

// demoTopics are the demo's topics in the order the summary lists them.
var demoTopics = []demoTopic{
	{demoOrders, 40, "plain tasks with a mix of results"},
	{demoPrices, 20, "a Replace stream: a newer price makes the older ones REDUNDANT"},
	{demoPipeline, 15, "composite steps: validate; then price and stock at once; then ship"},
	{demoRetries, 10, "transient failures retried with backoff, 3 attempts at most"},
	{demoLater, 5, "a batch deferred with NotBefore, due 1 to 2 s after the start"},
	{demoPaused, 10, "pushed while the topic is paused, drained once it is resumed"},
}

// The shape of the demo's work.
const (
	demoBatch       = 25                     // tasks per push
	demoPriceSeries = 40                     // identifiers of the price stream, at most
	demoDeferFrom   = time.Second            // the first deferred task is due this long after the start
	demoDeferSpan   = time.Second            // and the last one this much later
	demoMaxAttempts = 3                      // runs of a task of demo.retries, at most
	demoBackoffBase = 50 * time.Millisecond  // the first wait before a retry
	demoBackoffCap  = 400 * time.Millisecond // the longest wait before a retry
)

// demoPlan is how many tasks the producers push to each topic.
type demoPlan map[string]int

// planDemo shares total tasks among the topics, each getting at least
// one; demo.orders takes what rounding leaves.
func planDemo(total int) demoPlan {
	plan := demoPlan{}
	rest := total
	for _, t := range demoTopics[1:] {
		plan[t.name] = max(1, total*t.share/100)
		rest -= plan[t.name]
	}
	plan[demoOrders] = max(1, rest)
	return plan
}

// total is the number of tasks of the plan.
func (p demoPlan) total() int {
	n := 0
	for _, count := range p {
		n += count
	}
	return n
}

// priceSeries is how many identifiers the price stream cycles through:
// each is pushed about ten times, or more once there are demoPriceSeries.
func (p demoPlan) priceSeries() int {
	return min(demoPriceSeries, max(1, p[demoPrices]/10))
}

// demoInput is the input of every demo task: its number within its topic,
// which the handlers decide by, and some payload for show.
type demoInput struct {
	N      int     `json:"n"`
	Amount int     `json:"amount,omitempty"`
	Pair   string  `json:"pair,omitempty"`
	Price  float64 `json:"price,omitempty"`
	SKU    string  `json:"sku,omitempty"`
	Qty    int     `json:"qty,omitempty"`
	Fails  int     `json:"fails,omitempty"`
}

// demoCreation returns the n-th task of topic (from 0) as the producers
// push it.
func (p demoPlan) demoCreation(topic string, n int, start time.Time) taskapi.Creation {
	in := demoInput{N: n}
	c := taskapi.Creation{Identifier: fmt.Sprintf("%s-%05d", topic[len("demo."):], n)}
	switch topic {
	case demoOrders:
		in.Amount = 500 + n*37%9500
		c.Reference = fmt.Sprintf("customer-%d", n%13)
	case demoPrices:
		in.Pair = fmt.Sprintf("pair-%02d", n%p.priceSeries())
		in.Price = 1 + float64(n*7919%10000)/10000
		c.Identifier = in.Pair
	case demoPipeline:
		in.SKU, in.Qty = fmt.Sprintf("sku-%03d", n%211), n%25
	case demoRetries:
		in.Fails = demoRetryFailures(n)
	case demoLater:
		c.NotBefore = start.Add(demoDeferFrom + demoDeferSpan*time.Duration(n)/time.Duration(max(1, p[demoLater])))
	}
	raw, _ := json.Marshal(in) // a struct of plain fields always marshals
	c.Input = string(raw)
	return c
}

// demoRetryFailures is how many runs of the n-th task of demo.retries fail
// transiently: none for half of them, one or two for four in ten (they
// succeed on a later attempt), and more than the attempts allow for one
// in ten.
func demoRetryFailures(n int) int {
	switch n % 10 {
	case 5, 6:
		return 1
	case 7, 8:
		return 2
	case 9:
		return demoMaxAttempts
	}
	return 0
}

// parseDemoInput reads a demo task's input; a task of someone else's
// reads as number 0.
func parseDemoInput(task taskapi.Task) demoInput {
	var in demoInput
	_ = json.Unmarshal([]byte(task.Input), &in)
	return in
}
