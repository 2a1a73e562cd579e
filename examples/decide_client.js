// A scheduler written in JavaScript asking hpcopt for one window decision at a time.
// Node.js standard library only: it starts `hpcopt serve --stdio` once and speaks the
// hpcopt/1 protocol (one JSON request per line, one JSON reply per line).
//
//   node examples/decide_client.js            (hpcopt on PATH, e.g. inside its venv)
"use strict";
const { spawn } = require("child_process");
const readline = require("readline");

const server = spawn(process.env.HPCOPT || "hpcopt", ["serve", "--stdio"],
                     { stdio: ["pipe", "pipe", "inherit"] });
const pending = new Map();
readline.createInterface({ input: server.stdout }).on("line", (line) => {
  const reply = JSON.parse(line);
  pending.get(reply.id)(reply);
  pending.delete(reply.id);
});
let nextId = 1;
function ask(request) {
  const id = nextId++;
  return new Promise((resolve) => {
    pending.set(id, resolve);
    server.stdin.write(JSON.stringify({ id, ...request }) + "\n");
  });
}

async function main() {
  const hello = await ask({ op: "hello" });
  console.log(`${hello.protocol} server, hpcopt ${hello.version}`);
  // the machine at t = 10 s: 10 nodes, job r1 runs on 6 of them until (about) t = 300 s
  const window = {
    time: 10, system: { nodes: 10 }, free: { nodes: 4 },
    queue: [{ id: "a", submit: 0, walltime: 100, nodes: 6 },
            { id: "b", submit: 5, walltime: 50, nodes: 2 },
            { id: "c", submit: 6, walltime: 500, nodes: 1 }],
    running: [{ id: "r1", nodes: 6, expected_end: 300 }],
  };
  for (const [policy, options] of [["fcfs", {}], ["knapsack", { backend: "dp" }]]) {
    const d = await ask({ op: "decide", policy, options, window });
    if (!d.ok) throw new Error(d.error.message);
    const reserve = d.reserve ? `${d.reserve.id}@${d.reserve.time}` : "none";
    console.log(`${policy}: start [${d.start}] reserve ${reserve} backfill [${d.backfill}]`);
  }
  const bad = await ask({ op: "decide", window: { time: "soon" } });
  console.log(`bad request -> ${bad.error.type}: ${bad.error.message}`);
  server.stdin.end();
}
main();
