// An agent that answers each packet by asking an OpenAI-compatible chat API.
//   OPENAI_BASE_URL=https://api.example.com/v1 OPENAI_API_KEY=... MODEL=... \
//   AGENT_TOKEN=... node examples/openai_agent.mjs ws://127.0.0.1:18790/
import { Gateway } from '@orchestrata/client';

const gw = await Gateway.connect(process.argv[2], { token: process.env.AGENT_TOKEN });
for await (const packet of gw.volk('U:Vz', { cursor: 'vz.cursor' }).inbox()) {
  await packet.ack();
  await packet.work('in_progress');
  const r = await fetch(`${process.env.OPENAI_BASE_URL}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${process.env.OPENAI_API_KEY}` },
    body: JSON.stringify({ model: process.env.MODEL, messages: [{ role: 'user', content: JSON.stringify(packet.payload) }] }),
  });
  const answer = (await r.json()).choices?.[0]?.message?.content ?? '';
  await packet.reply({ answer });
  await packet.resolve({ answer });
}
