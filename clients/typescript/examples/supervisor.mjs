// A supervisor: U:Vz hands each task to a junior of its own (agents.spawn on a configured
// agents.drivers profile) and collects the juniors' answers from its inbox.
//   node examples/supervisor.mjs URL DRIVER TASK... (AGENT_TOKEN acts as U:Vz)
// Prints {task: answer} as JSON.
import { Gateway } from '@orchestrata/client';

const [url, driver, ...tasks] = process.argv.slice(2);
const gw = await Gateway.connect(url, { token: process.env.AGENT_TOKEN });
const volk = gw.volk('U:Vz', { start: 'latest' }); // only the answers to come
await volk.start(); // subscribed before the first junior can answer
const juniors = await Promise.all(tasks.map((task) => gw.agents.spawn({ parent: 'U:Vz', driver, task })));
const taskOf = new Map(juniors.map((j, i) => [j.task_id, tasks[i]]));
const answers = {};
for await (const packet of volk.inbox()) {
  const { task_id, output, error } = packet.payload ?? {};
  if (packet.subject === 'junior_result' && taskOf.has(task_id)) answers[taskOf.get(task_id)] = output ?? { error };
  if (Object.keys(answers).length === tasks.length) break;
}
console.log(JSON.stringify(answers));
await gw.drain();
