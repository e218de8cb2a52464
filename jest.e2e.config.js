// End-to-end suite: a real n8n 2.x with this package installed as a community package, real
// Postgres, real HTTP deliveries. One stack for all test files (globalSetup), files run one by one.
// E2E_TOPOLOGY=single (default): one n8n process, every file in test/e2e/.
// E2E_TOPOLOGY=queue: n8n's queue mode (Redis, main + 2 workers): the production checklist, the seed
// experiment, the signature cases, the error workflow, the replay template, Key From: Paired Item,
// the ordered template's failures and the install through n8n's installer again, the embedded
// store's seed experiment, burst and checklist (workers sharing main's n8n folder), then
// test/e2e/queue/ (bursts, soaks, crashes, restarts, the embedded store refused with separate folders).
// scripts/test-e2e.js (npm run test:e2e) runs both, one after the other.
// On n8n 1.x, queue mode leaves out what n8n 1.x itself fails (test/support/stack/n8nVersion.js, queueFilesNotRun).
const { TOPOLOGY } = require('./test/support/e2e/topology');
const { selectedN8nVersion, queueFilesNotRun } = require('./test/support/stack/n8nVersion');

const testMatch =
	TOPOLOGY === 'queue'
		? ['checklist', 'seed-experiment', 'signature', 'mark-failed-on-error', 'replay', 'settle-paired-item', 'update-before-create', 'user-business-step', 'answers', 'community-installer', 'embedded-seed-experiment', 'embedded-burst', 'embedded-checklist'].map((name) => `<rootDir>/test/e2e/${name}.e2e.test.js`).concat('<rootDir>/test/e2e/queue/*.e2e.test.js')
		: ['<rootDir>/test/e2e/*.e2e.test.{js,ts}'];

const n8nVersion = selectedN8nVersion({ argv: [] });

module.exports = {
	displayName: `e2e ${TOPOLOGY} (n8n ${n8nVersion})`,
	rootDir: __dirname,
	testMatch,
	testPathIgnorePatterns: ['/node_modules/', ...(TOPOLOGY === 'queue' ? queueFilesNotRun(n8nVersion) : [])],
	transform: { '^.+\\.ts$': ['ts-jest', { tsconfig: 'tsconfig.test.json' }] },
	testEnvironment: 'node',
	// The stack's work dirs (n8n user folders with installed packages) are not part of the suite.
	modulePathIgnorePatterns: ['<rootDir>/.e2e/', '<rootDir>/.demo/'],
	globalSetup: '<rootDir>/test/support/e2e/globalSetup.js',
	globalTeardown: '<rootDir>/test/support/e2e/globalTeardown.js',
	maxWorkers: 1,
	testTimeout: 300000,
	slowTestThreshold: 60,
};
