# Writes oracle-input.json, the oracle request behind oracle-golden.json (run
# make goldens GOLDENS=connect afterwards). Each entry is one offsets-topic record: connector name, partition and offset as
# JSON text (offset null = tombstone). "orders" asks for HashMap key orders only.
import json, os
E=[]
def e(note,name,part,off):
    E.append({"note":note,"name":name,"partition":part,"offset":off})
c=lambda d: json.dumps(d,separators=(',',':'),ensure_ascii=False)
e("FileStream spec vector","file-src-1",'{"filename":"test.txt"}','{"position":30}')
e("FileStream stdin","file-src-2",'{"filename":null}','{"position":0}')
e("FileStream large position","file-src-3",'{"filename":"/var/log/app/server.log"}','{"position":9223372036854775807}')
e("MM2 source spec vector","mm2-source",'{"cluster":"A","partition":0,"topic":"orders"}','{"offset":42}')
e("MM2 source insertion order topic,partition,cluster","mm2-source",'{"topic":"orders","partition":7,"cluster":"primary"}','{"offset":1234567}')
e("MM2 source tombstone","mm2-source",'{"topic":"payments.v1","partition":11,"cluster":"us-east"}',None)
e("MM2 checkpoint","mm2-checkpoint",'{"group":"billing-consumers","topic":"invoices","partition":3}','{"offset":0}')
e("MM2 heartbeat","mm2-heartbeat",'{"sourceClusterAlias":"A","targetClusterAlias":"B"}','{"offset":0}')
e("sink-shaped map","sink-1",'{"kafka_topic":"orders","kafka_partition":2}','{"kafka_offset":100}')
e("Debezium MySQL","inventory-connector",'{"server":"dbserver1"}','{"server_id":223344,"gtids":"3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5","file":"mysql-bin.000003","pos":154,"event":2,"row":1,"ts_sec":1700000000}')
e("Debezium MySQL <=2.5 with transaction_id null","inventory-connector",'{"server":"dbserver1"}','{"server_id":223344,"gtids":"3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5","file":"mysql-bin.000003","pos":154,"event":2,"row":1,"ts_sec":1700000000,"transaction_id":null}')
e("Debezium MySQL snapshot","mysql-snap",'{"server":"dbserver1"}','{"file":"mysql-bin.000001","pos":4,"ts_sec":1700000000,"snapshot":true}')
e("Debezium MySQL 13 keys (capacity 32)","mysql-big",'{"server":"dbserver1"}',c({"server_id":223344,"gtids":"uuid:1-5","file":"mysql-bin.000003","pos":154,"event":2,"row":1,"ts_sec":1700000000,"snapshot":"INCREMENTAL","transaction_id":"tx-1","incremental_snapshot_primary_key":"aced0005","incremental_snapshot_maximum_key":"aced0006","incremental_snapshot_collections":'[{"incremental_snapshot_collections_id":"db.t"}]',"incremental_snapshot_correlation_id":None}))
e("Debezium PostgreSQL","pg-connector",'{"server":"dbserver1"}','{"ts_usec":1767208115470483,"txId":1007,"lsn":37051152,"lsn_proc":37051152,"lsn_commit":36989040,"messageType":"INSERT"}')
e("Debezium PostgreSQL snapshot","pg-snap",'{"server":"dbserver1"}','{"ts_usec":1767208115470483,"txId":1007,"lsn":37051152,"xmin":null,"snapshot":"INITIAL","last_snapshot_record":false,"snapshot_completed":false}')
e("Debezium PostgreSQL 3.7 all keys","pg-all",'{"server":"dbserver1"}','{"ts_usec":1,"txId":2,"lsn":3,"xmin":4,"snapshot":"INITIAL","last_snapshot_record":true,"snapshot_completed":true,"lsn_proc":5,"lsn_commit":6,"messageType":"COMMIT","lsn_events_processed":7,"transaction_id":"t"}')
e("Debezium SQL Server","sqlserver-connector",'{"server":"server1","database":"testDB"}','{"commit_lsn":"0000002d:00000b48:0003","change_lsn":"0000002d:00000b48:0002","event_serial_no":1}')
e("Debezium SQL Server <=3.0.1 snapshot","sqlserver-snap",'{"server":"server1","database":"testDB"}','{"snapshot":true,"snapshot_completed":false,"commit_lsn":"NULL"}')
e("Debezium MongoDB 2.7+","mongo-connector",'{"server_id":"dbserver1"}','{"sec":1700000000,"ord":1,"resume_token":"gmVnRq8AAAABK0ICAAAAABg="}')
e("Debezium MongoDB 2.0-2.5","mongo-connector",'{"rs":"rs0","server_id":"dbserver1"}','{"sec":1700000000,"ord":1,"transaction_id":null,"resume_token":"8265674..."}')
e("Debezium MongoDB tx","mongo-tx",'{"server_id":"dbserver1"}','{"sec":-1,"ord":-1,"initsync":true,"lsid":"abc","txnNumber":12,"resume_token":"x"}')
e("Debezium Oracle","oracle-connector",'{"server":"server1"}','{"commit_scn":"2885432:1:","snapshot_scn":"2885000","scn":"2885432"}')
e("Debezium Oracle full","oracle-full",'{"server":"server1"}','{"snapshot":"INITIAL","snapshot_completed":false,"snapshot_pending_tx":"a:1,b:2","scn":"2885432","scn_idx":3,"snapshot_scn":"2885000","commit_scn":null,"txId":"0a001b00","txSeq":5,"window_advance_enabled":true}')
e("Debezium Vitess per task","vitess",'{"server":"vt","task_key":"task0_2_0"}',c({"transaction_id":None,"vgtid":'[{"keyspace":"ks","shard":"-80","gtid":"MySQL56/abc:1-5"}]'}))
e("JDBC V1 timestamp+incrementing","jdbc-src",'{"table":"demo.accounts","protocol":"1"}','{"incrementing":3,"timestamp":1790818723729,"timestamp_nanos":729000000}')
e("JDBC query mode","jdbc-src",'{"query":"query"}','{"incrementing":18343}')
e("JDBC V0 bulk tombstone","jdbc-bulk",'{"table":"accounts"}',None)
e("Aiven S3 source","s3-src",'{"bucket":"my-bucket","objectKey":"topics/a/part-0001.json"}','{"recordCount":42}')
e("unicode and emoji in name and values","conn-ünïcødé-😀",'{"file":"données/日本語/😀.txt"}','{"note":"naïve café ☕ 𝄞"}')
e("control characters","ctrl\t\u0001\u001f",r'{"name":"a\u0000b\u0001c\u001f"}',r'{"v":"tab\tnl\ncr\rff\fbs\b del\u007f"}')
e("quotes and backslashes",'quote"back\\slash',r'{"path":"C:\\dir\\\"x\""}',r'{"v":"\"\\\/"}')
e("html characters and slash","html<>&/",'{"q":"<script>&amp;</script> a/b"}','{"v":"<>&/"}')
e("U+2028 U+2029","line\u2028sep\u2029",r'{"k\u2028":"v\u2029"}',r'{"v":"\u2028\u2029\u0085\u00a0\ufeff\uffff"}')
e("non-BMP keys","emoji-keys",'{"😀":1,"a😀b":2,"𝄞":3}','{"🚀":"🚀"}')
e("escaped surrogate pair in input","esc-pair",r'{"k":"\ud83d\ude00"}',r'{"\uD834\uDD1E":1}')
e("empty strings","",'{"":""}','{"":""}')
e("large ints","nums",'{"id":9007199254740993}','{"max":9223372036854775807,"min":-9223372036854775808,"js":9007199254740993}')
e("negative numbers","neg",'{"p":-1}','{"a":-42,"b":-0,"c":-0.0,"d":-1.5}')
e("floats","floats",'{"x":1}','{"a":30.0,"b":1e10,"c":0.1,"d":1e-5,"e":123456789.0,"f":1E2,"g":0.0001,"h":2.5e-3,"i":9999999.0,"j":10000000.0}')
e("more floats","floats2",'{"x":2}','{"a":0.001,"b":0.00099,"c":1.7976931348623157e308,"d":4.9e-324,"e":3.141592653589793,"f":100.5,"g":1234567.125,"h":0.3,"i":2e-3,"j":1.0E-10}')
e("float exponents","floats3",'{"x":3}','{"a":1E+3,"b":5e-1,"c":1.5e300,"d":-2.5E-300,"e":12345.678e3,"f":0.1e1,"g":1e-400}')
e("float in partition","floatpart",'{"ratio":0.5,"n":1.0}','{"offset":1}')
e("booleans and nulls","bools",'{"flag":true}','{"t":true,"f":false,"n":null}')
e("empty partition and offset","empty",'{}','{}')
e("empty partition tombstone","empty",'{}',None)
e("duplicate keys","dups",'{"a":1,"b":2,"a":3}','{"x":1,"x":2,"y":3,"x":4}')
e("nested values (Connect rejects, converter reorders)","nested",'{"server":"s"}','{"arr":[1,"two",null,{"b":1,"a":2}],"obj":{"topic":"t","partition":1,"cluster":"c"}}')
e("whitespace in input","spaces",' { "topic" : "t" , "partition" : 1 , "cluster" : "c" } ',' {\n"offset" :\t5 } ')
keys13=["server_id","gtids","file","pos","event","row","ts_sec","snapshot","transaction_id","incremental_snapshot_primary_key","incremental_snapshot_maximum_key","incremental_snapshot_collections","incremental_snapshot_correlation_id"]
e("13 keys capacity 32","wide13",'{"server":"s"}',c({k:i for i,k in enumerate(keys13)}))
e("13 keys partition","wide13p",c({f"key{i}":i for i in range(13)}),'{"offset":1}')
e("25 keys capacity 64","wide25",'{"server":"s"}',c({f"field_{i}":i for i in range(25)}))
e("49 keys capacity 128","wide49",'{"server":"s"}',c({f"f{i}":f"v{i}" for i in range(49)}))
t9=['k120','k131','k142','k0','k70','k81','k92','k609','k708']
t10=['k0','k70','k81','k92','k719','k609','k818','k708','k917','k807']
def jh(s):
    x=0
    b=s.encode('utf-16-be')
    for i in range(0,len(b),2):
        x=(31*x+((b[i]<<8)|b[i+1]))&0xffffffff
    return x^(x>>16)
tree=[f"k{i}" for i in range(100000) if jh(f"k{i}")&127==37][:12]
# Tree bins: "Aa" and "BB" have the same String.hashCode, so all 16 strings of four such blocks
# share one hash and are ordered in their tree by String.compareTo.
import itertools
same_hash=["".join(p) for p in itertools.product(["Aa","BB"],repeat=4)]
# Keys sharing bucket 37 of 64, split by bit 6 when the table grows to 128 (49+ keys):
lo=[f"s{i}" for i in range(200000) if jh(f"s{i}")&127==37]
hi=[f"s{i}" for i in range(200000) if jh(f"s{i}")&127==101]
filler=[f"f{i}" for i in range(1000) if jh(f"f{i}")&63!=37]
split77=[x for pair in zip(lo[:7],hi[:7]) for x in pair]+filler[:36]
split95=lo[:9]+hi[:5]+filler[:36]
split_grow=lo[:5]+hi[:8]+filler[:60]
e("9 keys in one bucket of 16: treeifyBin resizes to 32","collide9",'{"server":"s"}',c({k:i for i,k in enumerate(t9)}))
e("10 keys in one bucket of 32: treeifyBin resizes to 64","collide10",'{"server":"s"}',c({k:i for i,k in enumerate(t10)}))
e("colliding keys plus others","collide-mix",c({k:i for i,k in enumerate(['a','b']+t9+['z'])}),'{"offset":5}')
e("long connector name","c"*300,'{"server":"s"}','{"offset":1}')
e("name with spaces and dots","my connector.v2 (prod)",'{"server":"s"}','{"offset":1}')
e("one-letter everything","a",'{"b":"c"}','{"d":"e"}')
for i in range(8):
    e(f"spread {i}",f"conn-{i}",c({"topic":f"topic-{i}","partition":i,"cluster":"src"}),c({"offset":i*1000}))
orders=[
 '{"cluster":"A","partition":0,"topic":"orders"}',
 '{"topic":"orders","partition":0,"cluster":"A"}',
 '{"group":"g","topic":"t","partition":0}',
 '{"sourceClusterAlias":"A","targetClusterAlias":"B"}',
 '{"kafka_topic":"t","kafka_partition":0}',
 '{"server":"s","database":"d"}',
 '{"rs":"r","server_id":"s"}',
 '{"table":"t","protocol":"1"}',
 '{"bucket":"b","objectKey":"o"}',
 '{"objectKey":"o","bucket":"b"}',
 c({k:0 for k in keys13}),
 c({k:0 for k in t9}),
 c({k:0 for k in t10}),
 c({k:0 for k in reversed(t10)}),
 c({k:0 for k in tree}),
 c({k:0 for k in same_hash}),
 c({k:0 for k in reversed(same_hash)}),
 c({k:0 for k in split77}),
 c({k:0 for k in split95}),
 c({k:0 for k in split_grow}),
]
doc={"partitions":25,"murmur2":["21","foobar","abc","","a","ab","abcd","abcde","😀","日本語","\u0000\u00ff"],"entries":E,"orders":orders}
open(os.path.join(os.path.dirname(os.path.abspath(__file__)),'oracle-input.json'),'w').write(json.dumps(doc,indent=1,ensure_ascii=False)+"\n")
print(len(E))
