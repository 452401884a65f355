// node-redlock (npm redlock 5.0.0-beta.2 over ioredis) under the scenarios dlock-bench runs on
// Redis, on one server (Redlock with one master: SET NX PX, a Lua compare-and-delete).
//
//   node redlock_lock.mjs --backend redis://HOST:PORT --scenario uncontended|contended
//                         --iterations K [--clients N]
//
// Each client is a worker thread with its own connection, taking tickets from a counter the
// workers share before each acquisition, as dlock-bench's clients do. A waiter retries after
// redlock's default 200 ms (plus up to 200 ms jitter), without limit. Prints one JSON line
// with the fields of bench/peers/peer_harness.py.
import { Worker, isMainThread, parentPort, workerData } from "node:worker_threads";
import { parseArgs } from "node:util";

const TTL_MS = 30000;

async function client({ backend, name, tickets, iterations, start }) {
  const { default: Redis } = await import("ioredis");
  const { default: Redlock } = await import("redlock");
  const redis = new Redis(backend);
  const redlock = new Redlock([redis], { retryCount: -1 });
  await redis.ping();
  parentPort.postMessage({ ready: true });
  Atomics.wait(start, 0, 0);
  const ops = [];  // [acquire returned, release called] in ns, on the clock the threads share
  while (Atomics.add(tickets, 0, 1) < iterations) {
    const lock = await redlock.acquire([name], TTL_MS);
    const acquired = process.hrtime.bigint();
    const released = process.hrtime.bigint();
    await lock.release();
    ops.push([acquired, released]);
  }
  redis.disconnect();
  parentPort.postMessage({ ops });
}

// The contract's hand-off: acquisitions sorted by when acquire() returned, each one's return
// minus the previous one's release() call; nearest-rank percentiles in µs.
function handoff(outcomes) {
  const ops = outcomes.flat().sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  const gaps = [];
  for (let i = 1; i < ops.length; ++i) gaps.push(Number(ops[i][0] - ops[i - 1][1]) / 1000);
  gaps.sort((a, b) => a - b);
  if (gaps.length === 0) return {};
  const at = (p) => Math.round(gaps[Math.max(1, Math.ceil((p / 100) * gaps.length)) - 1] * 10) / 10;
  return { handoff_p50_us: at(50), handoff_p99_us: at(99) };
}

async function main() {
  const { values } = parseArgs({
    options: {
      backend: { type: "string" },
      scenario: { type: "string" },
      iterations: { type: "string" },
      clients: { type: "string", default: "1" },
    },
  });
  const iterations = Number(values.iterations);
  const scenario = values.scenario;
  if (!values.backend || !["uncontended", "contended"].includes(scenario) ||
      !(iterations >= 1) || !(Number(values.clients) >= 1)) {
    console.error("usage: redlock_lock.mjs --backend redis://HOST:PORT " +
                  "--scenario uncontended|contended --iterations K [--clients N]");
    process.exit(2);
  }
  const clients = scenario === "uncontended" ? 1 : Number(values.clients);
  const tickets = new Int32Array(new SharedArrayBuffer(4));
  const start = new Int32Array(new SharedArrayBuffer(4));
  const name = `/bench/node-redlock/${scenario}-${process.pid}`;
  const workers = [];
  const ready = [];
  const finished = [];
  for (let i = 0; i < clients; ++i) {
    const worker = new Worker(new URL(import.meta.url), {
      workerData: { backend: values.backend, name, tickets, iterations, start },
    });
    workers.push(worker);
    ready.push(new Promise((resolve, reject) => {
      worker.once("error", reject);
      worker.once("message", resolve);
    }));
    finished.push(new Promise((resolve, reject) => {
      worker.on("error", reject);
      worker.on("message", (message) => { if (message.ops) resolve(message.ops); });
    }));
  }
  await Promise.all(ready);
  const cpu = process.cpuUsage();
  const began = process.hrtime.bigint();
  Atomics.store(start, 0, 1);
  Atomics.notify(start, 0);
  const outcomes = await Promise.all(finished);
  const elapsed = Number(process.hrtime.bigint() - began) / 1e9;
  const used = process.cpuUsage(cpu);
  const counts = outcomes.map((ops) => ops.length);
  console.log(JSON.stringify({
    impl: "node-redlock", scenario, clients, iterations,
    elapsed_s: Math.round(elapsed * 1e6) / 1e6,
    ops_per_s: Math.round((iterations / elapsed) * 100) / 100,
    per_client_min: Math.min(...counts), per_client_max: Math.max(...counts),
    ...handoff(outcomes),
    cpu_us_per_op: Math.round(((used.user + used.system) / iterations) * 10) / 10,
  }));
}

if (isMainThread) {
  main().catch((error) => {
    console.error(`node-redlock: ${error.stack || error}`);
    process.exit(1);
  });
} else {
  client(workerData).catch((error) => {
    console.error(`node-redlock client: ${error.stack || error}`);
    process.exit(1);
  });
}
