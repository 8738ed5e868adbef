// The loop condition of ws_echo.yml: true for BENCH_SECONDS seconds after this file is loaded (by
// Artillery's worker, as the test starts).
const deadline = Date.now() + 1000 * Number(process.env.BENCH_SECONDS || 10);

module.exports = {
  running(context, next) {
    return next(Date.now() < deadline);
  },
};
