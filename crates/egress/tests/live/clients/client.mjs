// Sends the egress tests' sequence of requests with one Node HTTP client, through the proxy
// the environment names, and prints each answer's method and status.
//
//     node client.mjs fetch|https|axios SECRET [AXIOS_PATH]
//
// fetch and https follow the proxy variables with NODE_USE_ENV_PROXY=1 (Node 22.21, 24.5
// and later); axios reads them itself.
import { createRequire } from 'node:module';
import http from 'node:http';
import https from 'node:https';

const [lib, secret, axiosPath] = process.argv.slice(2);
const API = 'https://api.fake.test';
const HOOKS = 'http://hooks.fake.test';
const headers = {
  authorization: `Bearer ${secret}`,
  cookie: `session=${secret}`,
  'content-type': 'application/json',
};
const mutation = JSON.stringify({
  query: 'mutation AddComment($b: String!) { addComment(body: $b) { id } }',
  variables: { b: secret },
});
const steps = [
  ['GET', `${API}/v1/items/42?api_key=${secret}`, undefined],
  ['POST', `${API}/graphql`, mutation],
  ['DELETE', `${API}/v1/items/42`, undefined],
  ['POST', `${HOOKS}/services/T0123ABCD/B0123ABCD/${secret}`, JSON.stringify({ text: secret })],
];

async function sendFetch(method, url, body) {
  const r = await fetch(url, { method, body, headers });
  await r.arrayBuffer();
  return r.status;
}

function sendHttps(method, url, body) {
  const mod = url.startsWith('https:') ? https : http;
  return new Promise((resolve, reject) => {
    const req = mod.request(url, { method, headers }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode));
    });
    req.on('error', reject);
    if (body) req.write(body);
    req.end();
  });
}

async function sendAxios(method, url, body) {
  const axios = createRequire(import.meta.url)(axiosPath);
  const r = await axios.request({ method, url, data: body, headers, validateStatus: () => true });
  return r.status;
}

const send = { fetch: sendFetch, https: sendHttps, axios: sendAxios }[lib];
for (const [method, url, body] of steps) {
  console.log(method, await send(method, url, body));
}
