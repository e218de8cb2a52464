// The ports the test stacks ask for (test/support/stack/postgresServer.ts freePort): a stack asks for several one
// after another (a worker's task broker and its health check), and the kernel may hand a just-closed port out
// again; two processes then collide when both bind it.
import { freePort, uniquePorts } from '../support/stack/postgresServer';

describe('freePort', () => {
	it('hands a port the probe gives twice out once, and takes the next one', async () => {
		const probed = [42613, 42613, 42613, 40001];
		const next = uniquePorts(async () => probed.shift() as number);
		expect([await next(), await next()]).toEqual([42613, 40001]);
	});

	it('says so when the probe only gives ports handed out already', async () => {
		const next = uniquePorts(async () => 5000, 3);
		await next();
		await expect(next()).rejects.toThrow('no free port on 127.0.0.1 in 3 tries');
	});

	it('never hands out the same real port twice', async () => {
		const ports: number[] = [];
		for (let i = 0; i < 200; i++) ports.push(await freePort());
		expect(new Set(ports).size).toBe(ports.length);
	});
});
