/*
 * A program of libogg's API, built against the shared library that
 * `ftpatch cc` built with libtool: it packs packets into pages and reads
 * them back, printing what it sees.
 */
#include <ogg/ogg.h>
#include <stdio.h>
#include <string.h>

int main(void)
{
	ogg_stream_state out, in;
	ogg_sync_state sync;
	ogg_page page;
	ogg_packet packet;
	unsigned char data[300];
	int pages = 0, packets = 0;

	ogg_stream_init(&out, 1234);
	ogg_stream_init(&in, 1234);
	ogg_sync_init(&sync);
	for (int i = 0; i < 20; i++) {
		memset(data, i, sizeof data);
		packet = (ogg_packet){.packet = data, .bytes = 100 + 10 * i, .b_o_s = i == 0, .e_o_s = i == 19, .granulepos = i, .packetno = i};
		ogg_stream_packetin(&out, &packet);
		while (ogg_stream_pageout(&out, &page) || (i == 19 && ogg_stream_flush(&out, &page))) {
			char *buf = ogg_sync_buffer(&sync, page.header_len + page.body_len);
			memcpy(buf, page.header, page.header_len);
			memcpy(buf + page.header_len, page.body, page.body_len);
			ogg_sync_wrote(&sync, page.header_len + page.body_len);
		}
	}
	while (ogg_sync_pageout(&sync, &page) == 1) {
		pages++;
		printf("page %d: serial %d, %ld body bytes, granule %lld, checksum ok\n", ogg_page_pageno(&page),
		       ogg_page_serialno(&page), page.body_len, (long long)ogg_page_granulepos(&page));
		ogg_stream_pagein(&in, &page);
		while (ogg_stream_packetout(&in, &packet) == 1)
			packets++;
	}
	printf("%d pages, %d packets\n", pages, packets);
	ogg_stream_clear(&out);
	ogg_stream_clear(&in);
	ogg_sync_clear(&sync);
	return packets == 20 ? 0 : 1;
}
