import net from 'node:net';

/**
 * A TCP proxy in front of Postgres that can break the network the ways production does:
 * - `cutReplyAfter(marker)`: the next statement whose text contains `marker` reaches the server
 *   and runs to the end (ReadyForQuery: committed), but none of its answer reaches the client;
 *   both sockets are then destroyed. That is a reply lost after the commit.
 * - `goSilent()`: from now on no byte is forwarded in either direction and every socket stays
 *   open: a dead network path (no RST, no FIN), which only a timeout notices.
 * - `dropConnections(true)`: every open connection is cut, and each new one is closed as soon as it
 *   is accepted (a server that is down or restarting), until `dropConnections(false)`.
 * It parses the server's stream into protocol messages (type byte + int32 length) to know when a
 * statement's answer is complete; the client's bytes are forwarded as they come. A named prepared
 * statement's text crosses the wire once (Parse); later calls send only its name (Bind), so the
 * proxy remembers each name's text and matches the marker against it too.
 */
export class TcpProxy {
	/** Answers withheld and connections cut, one per `cutReplyAfter`. */
	readonly cuts: Array<{ marker: string; withheldMessageTypes: string }> = [];
	private readonly server = net.createServer((client) => this.accept(client));
	private readonly sockets = new Set<net.Socket>();
	private pendingCut: string | null = null;
	/** Prepared statement name → text, from every Parse the proxy has forwarded (lib/store/postgres/preparedStatements.ts names). */
	private readonly preparedTexts = new Map<string, string>();
	private silent = false;
	private dropping = false;

	private constructor(
		private readonly targetHost: string,
		private readonly targetPort: number,
	) {}

	static async start(targetHost: string, targetPort: number): Promise<TcpProxy> {
		const proxy = new TcpProxy(targetHost, targetPort);
		await new Promise<void>((resolve) => proxy.server.listen(0, '127.0.0.1', resolve));
		return proxy;
	}

	get port(): number {
		return (this.server.address() as net.AddressInfo).port;
	}

	cutReplyAfter(marker: string): void {
		this.pendingCut = marker;
	}

	goSilent(): void {
		this.silent = true;
	}

	dropConnections(on: boolean): void {
		this.dropping = on;
		if (on) for (const socket of this.sockets) socket.destroy();
	}

	/** Stops listening: new connections are refused (ECONNREFUSED), open ones carry on. */
	refuseNewConnections(): void {
		this.server.close();
	}

	async close(): Promise<void> {
		for (const socket of this.sockets) socket.destroy();
		if (this.server.listening) await new Promise<void>((resolve) => this.server.close(() => resolve()));
	}

	/** Whether the client's bytes name (Bind) a prepared statement whose text contains `marker`. */
	private namesStatementWith(wire: string, marker: string): boolean {
		for (const [name, text] of this.preparedTexts) if (text.includes(marker) && wire.includes(`${name}\0`)) return true;
		return false;
	}

	private accept(client: net.Socket): void {
		if (this.dropping) {
			client.destroy();
			return;
		}
		const upstream = net.connect(this.targetPort, this.targetHost);
		this.sockets.add(client).add(upstream);
		const destroyBoth = () => {
			client.destroy();
			upstream.destroy();
			this.sockets.delete(client);
			this.sockets.delete(upstream);
		};
		client.on('error', destroyBoth).on('close', destroyBoth);
		upstream.on('error', destroyBoth).on('close', destroyBoth);

		let cutting: string | null = null;
		let withheld = '';
		let serverBuffer = Buffer.alloc(0);
		client.on('data', (chunk: Buffer) => {
			if (this.silent) return;
			const wire = chunk.toString('latin1');
			for (const [, name, text] of wire.matchAll(/(idem_[0-9a-f]{32})\0([^\0]+)\0/g)) this.preparedTexts.set(name, text);
			if (this.pendingCut !== null && (chunk.includes(this.pendingCut) || this.namesStatementWith(wire, this.pendingCut))) {
				cutting = this.pendingCut;
				this.pendingCut = null;
			}
			upstream.write(chunk);
		});
		upstream.on('data', (chunk: Buffer) => {
			if (this.silent) return;
			serverBuffer = Buffer.concat([serverBuffer, chunk]);
			// Forward whole messages only, so a cut always falls on a message boundary.
			while (serverBuffer.length >= 5) {
				const length = serverBuffer.readInt32BE(1) + 1;
				if (serverBuffer.length < length) break;
				const message = serverBuffer.subarray(0, length);
				serverBuffer = serverBuffer.subarray(length);
				const type = String.fromCharCode(message[0]);
				if (cutting === null) {
					client.write(message);
					continue;
				}
				withheld += type;
				if (type === 'Z') {
					// ReadyForQuery: the statement ran to the end and committed; its answer is lost.
					this.cuts.push({ marker: cutting, withheldMessageTypes: withheld });
					destroyBoth();
					return;
				}
			}
		});
	}
}
