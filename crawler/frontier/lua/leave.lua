-- ARGV[3] this worker's id: it leaves the crawl (a clean stop). Its leases end now, so the reap
-- that follows queues their URLs again for the workers that go on; returns how many it held.
return end_worker(ARGV[3])
