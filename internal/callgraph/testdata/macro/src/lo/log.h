/* A macro calls lo's own function; a static inline function calls up
 * into hi. */
#define LOG(msg) log_write(msg, __LINE__)

void log_write(const char *msg, int line);
void hi_flush(void);

static inline void log_flush(void)
{
	hi_flush();
}
