// Push a task from JavaScript (or TypeScript) inside the producer's own
// transaction: an order and the task that mails its confirmation commit
// together, or neither does. See docs/languages.md. Needs node-postgres
// (npm install pg).
//
//     node push.mjs DSN TOPIC ORDER commit|rollback

import pg from 'pg';

const refused = new Set(['TR001', 'TR004']); // the topic's capacity, an identifier's

async function placeOrder(dsn, topic, order, outcome) {
  const client = new pg.Client({ connectionString: dsn });
  await client.connect();
  try {
    await client.query('CREATE TABLE IF NOT EXISTS orders (id text PRIMARY KEY)');
    await client.query('BEGIN');
    try {
      await client.query('INSERT INTO orders (id) VALUES ($1)', [order]);
      // A savepoint: a refused push leaves the order in place.
      await client.query('SAVEPOINT push');
      try {
        const { rows } = await client.query('SELECT public.task_push($1, $2, $3) AS sequence',
          [topic, order, JSON.stringify({ mail: 'confirmation' })]);
        await client.query('RELEASE SAVEPOINT push');
        console.log('pushed', rows[0].sequence);
      } catch (err) {
        if (!refused.has(err.code)) throw err;
        await client.query('ROLLBACK TO SAVEPOINT push');
        console.log('refused:', err.message);
      }
      await client.query(outcome === 'commit' ? 'COMMIT' : 'ROLLBACK'); // rollback: no order, no task
    } catch (err) {
      await client.query('ROLLBACK');
      throw err;
    }
    console.log(outcome);
  } finally {
    await client.end();
  }
}

await placeOrder(...process.argv.slice(2, 6));
