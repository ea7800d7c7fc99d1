"""The page store: files of gzip members on disk or in S3, WARC records and the metadata index."""
