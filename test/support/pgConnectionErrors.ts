import { createServer, type AddressInfo, type Server, type Socket } from 'node:net';

import { Client } from 'pg';

/**
 * Real errors of the `pg` client, as n8n's database layer meets them when its Postgres cannot be
 * reached: each comes from pg connecting to a socket that behaves like such a server.
 */

async function listen(onConnection: (socket: Socket) => void): Promise<Server> {
	const server = createServer(onConnection);
	await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
	return server;
}

async function connectError(port: number): Promise<Error> {
	const client = new Client({ host: '127.0.0.1', port, user: 'n8n', database: 'n8n', connectionTimeoutMillis: 5_000 });
	client.on('error', () => {});
	try {
		await client.connect();
	} catch (error) {
		return error as Error;
	} finally {
		await client.end().catch(() => undefined);
	}
	throw new Error('the connection was expected to fail');
}

/** A port nothing listens on: pg's error with code ECONNREFUSED. */
export async function connectionRefused(): Promise<Error> {
	const server = await listen(() => {});
	const { port } = server.address() as AddressInfo;
	await new Promise((resolve) => server.close(resolve));
	return connectError(port);
}

/** A server that closes the connection at once: pg's "Connection terminated unexpectedly" (no code). */
export async function connectionTerminated(): Promise<Error> {
	const server = await listen((socket) => socket.destroy());
	try {
		return await connectError((server.address() as AddressInfo).port);
	} finally {
		server.close();
	}
}

/**
 * A server answering the startup message the way Postgres does while it starts or stops: an
 * ErrorResponse with the given SQLSTATE. pg parses it into its own DatabaseError.
 */
export async function serverRefusesConnection(sqlstate: string, message: string): Promise<Error> {
	const field = (type: string, value: string) => Buffer.concat([Buffer.from(type), Buffer.from(value), Buffer.from([0])]);
	const body = Buffer.concat([field('S', 'FATAL'), field('V', 'FATAL'), field('C', sqlstate), field('M', message), Buffer.from([0])]);
	const length = Buffer.alloc(4);
	length.writeInt32BE(body.length + 4);
	const server = await listen((socket) => {
		socket.once('data', () => socket.end(Buffer.concat([Buffer.from('E'), length, body])));
	});
	try {
		return await connectError((server.address() as AddressInfo).port);
	} finally {
		server.close();
	}
}
