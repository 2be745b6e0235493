"""Where change events come from: the Kafka Connect S3-sink landing zone (local or s3://)."""
