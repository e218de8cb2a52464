// One HTTP request on a connection of its own, closed after the answer: what the e2e senders and the
// REST client send with. A kept-alive connection can be closed by n8n (its keep-alive timeout) just
// as the next request goes out on a loaded machine ("other side closed", a reset), and a POST cannot
// be sent again blindly: a sender that pooled connections would see errors no provider's own
// connection would, in the middle of an answer sequence a test asserts. None is ever reused.
import http from 'node:http';

export interface OwnConnectionAnswer {
	status: number;
	headers: http.IncomingHttpHeaders;
	text: string;
}

export interface OwnConnectionRequest {
	method?: string;
	headers?: Record<string, string>;
	body?: string;
	/** Gives up after this long: rejects with an error named TimeoutError (as fetch with AbortSignal.timeout). */
	timeoutMs?: number;
}

/** Sends one request on a new connection; rejects on a connection error (its `code` kept) or a timeout. */
export function requestOnOwnConnection(
	url: string,
	{ method = 'POST', headers = {}, body, timeoutMs }: OwnConnectionRequest = {},
): Promise<OwnConnectionAnswer> {
	const signal = timeoutMs === undefined ? undefined : AbortSignal.timeout(timeoutMs);
	const sentHeaders = body === undefined ? headers : { ...headers, 'content-length': String(Buffer.byteLength(body)) };
	return new Promise((resolve, reject) => {
		// A timeout's abort surfaces as an AbortError: reported as the TimeoutError that caused it.
		const failed = (error: Error) => reject(signal?.aborted ? (signal.reason as Error) : error);
		const sent = http.request(url, { method, headers: sentHeaders, agent: false, signal }, (res) => {
			const chunks: Buffer[] = [];
			res.on('data', (chunk: Buffer) => chunks.push(chunk));
			res.on('error', failed);
			res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text: Buffer.concat(chunks).toString('utf8') }));
		});
		sent.on('error', failed);
		sent.end(body);
	});
}

/** A response header's value as one string (n8n sends each of ours once), or null when absent. */
export function headerValue(headers: http.IncomingHttpHeaders, name: string): string | null {
	const value = headers[name.toLowerCase()];
	return value === undefined ? null : Array.isArray(value) ? value.join(', ') : value;
}
