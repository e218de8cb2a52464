// TEST_RETRY_TIMES=1 (the full check sets it): an integration, conformance or end-to-end test that
// fails is run once more. These tests race real OS processes, Postgres servers and n8n on two cores
// that the run shares between two steps; on a slow day one of thousands of timed answers comes late.
// The run's summary lists every test that needed another try, with its first failure: none is
// hidden, and a test that fails twice fails.
const retries = Number(process.env.TEST_RETRY_TIMES ?? 0);
if (retries > 0) jest.retryTimes(retries, { logErrorsBeforeRetry: true });
