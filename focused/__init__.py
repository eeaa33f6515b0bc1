"""focused: a topical web crawler built on Scrapy."""
