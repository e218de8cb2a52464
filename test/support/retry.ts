// TEST_RETRY_TIMES=1 (the full check sets it): an end-to-end test that fails is run once more.
// These tests time a real n8n on two cores that the run shares between two stacks; on a slow day one
// of thousands of timed answers comes late. Each test sends events of its own (fresh ids), so its
// second try does not meet its first one's keys. The run's summary lists every test that needed
// another try, with its first failure: none is hidden, and a test that fails twice fails.
const retries = Number(process.env.TEST_RETRY_TIMES ?? 0);
if (retries > 0) jest.retryTimes(retries, { logErrorsBeforeRetry: true });
