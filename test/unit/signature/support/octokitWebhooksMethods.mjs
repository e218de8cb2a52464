// Runs @octokit/webhooks-methods (ESM only, which Jest's CommonJS runtime cannot load) for the
// cross-check test: reads [{ op: 'sign', secret, payload } | { op: 'verify', secret, payload,
// signature }] as JSON on stdin and writes the results, in order, as JSON on stdout.
import { sign, verify } from '@octokit/webhooks-methods';

// Decoded as a whole: a multi-byte character may be split across chunks.
const chunks = [];
for await (const chunk of process.stdin) chunks.push(chunk);
const input = Buffer.concat(chunks).toString('utf8');
const results = [];
for (const job of JSON.parse(input)) {
	results.push(job.op === 'sign' ? await sign(job.secret, job.payload) : await verify(job.secret, job.payload, job.signature));
}
process.stdout.write(JSON.stringify(results));
